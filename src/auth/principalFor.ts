import type { Verification } from '../upstream/keyServiceContract.js';
import { authFailure } from './authFailures.js';
import type { WellFormedKey } from './keyFormat.js';
import type { Principal } from './principal.js';

/** Plans that include the public API; any other value, known or not, is below Pro. */
export const ELIGIBLE_PLANS: ReadonlySet<string> = new Set(['pro', 'business', 'enterprise']);

/** The one permission the public read routes need (permission strings are case-sensitive). */
export const REQUIRED_PERMISSION = 'read';

/**
 * What the key service said about a key → the caller, or the refusal (spec 3.1, 5.2, 5.3).
 * Order: who you are (401) before what you may do (403). A revoked key answers exactly
 * as an unknown one, whether or not it has also expired. The ceiling here is the key
 * service's own `used >= ceiling`; the calls it does not include yet are admission's
 * check, made after this one.
 */
export function principalFor(verification: Verification | null, key: WellFormedKey, now: Date): Principal {
  if (verification === null || verification.key.revokedAt !== null) throw authFailure('invalid_key');
  const { key: record, organization } = verification;
  if (record.expiresAt.getTime() <= now.getTime()) throw authFailure('expired_key');
  if (!record.permissions.includes(REQUIRED_PERMISSION)) throw authFailure('missing_permission');
  if (!ELIGIBLE_PLANS.has(organization.plan)) throw authFailure('plan_not_eligible');
  const { used, ceiling } = organization.usage;
  if (ceiling !== null && used >= ceiling) throw authFailure('usage_ceiling_reached');
  return { organizationId: record.organizationId, keyId: record.id, keyPrefix: key.prefix };
}
