import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { NEAR_CEILING_MARGIN } from '../limits/admission.js';
import type { KeyServiceClient } from '../upstream/keyServiceClient.js';
import type { KeyEventStream, KeyServiceEvent, Verification } from '../upstream/keyServiceContract.js';
import { describe } from '../upstream/upstreamFailure.js';
import type { UsageLedger } from '../usage/usageLedger.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { isJwtShaped, toWellFormedKey, type WellFormedKey } from './keyFormat.js';
import type { PresentedCredentials, Principal } from './principal.js';
import { type CachedVerification, createVerificationCache, type Verified } from './verificationCache.js';
import type { VerifyHow } from './verificationGate.js';

/** Keys checked against the key service; verifications are cached only while its event stream is alive. */

const DEFAULT_CACHE = {
  max: 10_000,
  ttlMs: 60_000,
  /** How long past `ttlMs` a verification may still be served while it is refreshed. */
  staleMs: 60_000,
  unknownMax: 10_000,
  unknownTtlMs: 10_000,
  /** Age beyond which an organization with a ceiling is verified again (while near it: always). */
  usageFreshnessMs: 5_000,
};

export type KeyAuthenticatorCacheOptions = typeof DEFAULT_CACHE;

export interface KeyAuthenticatorOptions {
  /** `refresh`: a background re-verification of a cached key, scheduled behind the callers waiting for one. */
  keyService: Pick<KeyServiceClient, 'followEvents'> & {
    verify(keyHash: string, how?: VerifyHow): Promise<Verification | null>;
  };
  ledger: Pick<UsageLedger, 'beforeVerify' | 'isNearCeiling'>;
  now: () => Date;
  logger: Logger;
  cache?: Partial<KeyAuthenticatorCacheOptions>;
}

export type KeyAuthenticator = ReturnType<typeof createKeyAuthenticator>;

/** Plans that include the public API; any other value, known or not, is below Pro. */
const ELIGIBLE_PLANS: ReadonlySet<string> = new Set(['pro', 'business', 'enterprise']);

export function createKeyAuthenticator(options: KeyAuthenticatorOptions) {
  const { keyService, ledger, now, logger } = options;
  const settings = { ...DEFAULT_CACHE, ...options.cache };
  const cache = createVerificationCache({ ...settings, ttlMs: settings.ttlMs + settings.staleMs, now });
  let stream: KeyEventStream | undefined;
  /** The organization of each key verified lately: a shared count is read by organization before the verify. */
  const organizationOfKey = new LRUCache<string, string>({ max: settings.max });

  const following = () => stream?.isConnected() ?? false;

  function onEvent(event: KeyServiceEvent): void {
    if (event.type === 'key.revoked') {
      cache.dropKey(event.keyHash);
      logger.info({ keyId: event.keyId, organizationId: event.organizationId }, 'key revoked: verification dropped');
    } else if (event.type === 'organization.updated') {
      cache.dropOrganization(event.organizationId);
      logger.info({ organizationId: event.organizationId }, 'organization updated: verifications dropped');
    } else {
      cache.clear();
      logger.info('key events reset: every verification dropped');
    }
  }

  function onConnectionChange(connected: boolean, detail: string): void {
    if (connected) {
      logger.info('following key events: verifications may be cached');
      return;
    }
    // Events may be missed from now on: nothing cached can be trusted, and nothing new is cached.
    cache.clear();
    if (stream) logger.warn({ detail }, 'key event stream down: verifying every request'); // not when closing
  }

  function usability(entry: CachedVerification): 'fresh' | 'stale' | 'unusable' {
    if (!following()) return 'unusable';
    const { organization } = entry.verification;
    const { used, ceiling, periodEnd } = organization.usage;
    const nowMs = now().getTime();
    const age = nowMs - entry.fetchedAt;
    if (ceiling === null) return age <= settings.ttlMs ? 'fresh' : 'stale';
    // A new period starts a new count: only the service knows it.
    if (nowMs >= periodEnd.getTime()) return 'unusable';
    // Reached by the service's own count, which only grows within a period; a raised ceiling is announced
    // (organization.updated) and drops this entry: until then, refusing again costs no verification.
    if (used >= ceiling) return 'fresh';
    if (ceiling - used <= NEAR_CEILING_MARGIN || ledger.isNearCeiling(organization.id)) return 'unusable';
    return age <= settings.usageFreshnessMs ? 'fresh' : 'stale';
  }

  async function verifyAndRemember(
    keyHash: string,
    lane?: 'refresh',
    organizationId?: string,
  ): Promise<Verified | null> {
    const generation = cache.generation();
    const cacheable = following();
    const knownOrganization = organizationId ?? organizationOfKey.get(keyHash);
    const sent = await ledger.beforeVerify(knownOrganization);
    let verification: Verification | null;
    try {
      verification = await keyService.verify(keyHash, { lane, organizationId: knownOrganization });
    } finally {
      sent.end();
    }
    // Remembered even without the stream: a new key's text cannot have been presented before it existed.
    if (verification === null) {
      cache.rememberUnknown(keyHash, generation);
      return null;
    }
    const { organization } = verification;
    organizationOfKey.set(keyHash, organization.id);
    const acknowledgedBefore = sent.acknowledgedFor(organization.id);
    if (acknowledgedBefore === null && organization.usage.ceiling !== null && organizationId === undefined) {
      // The shared count could not be read without knowing whose key it was: asked again, knowing it.
      return verifyAndRemember(keyHash, lane, organization.id);
    }
    const verified: Verified = { verification, acknowledgedBefore: acknowledgedBefore ?? 0 };
    if (cacheable && following()) cache.remember(keyHash, verified, generation);
    return verified;
  }

  /** A usable cached verification, or a known unknown key, at once; else the key service's answer. */
  function verifiedFor(keyHash: string): Verified | null | Promise<Verified | null> {
    const cached = cache.get(keyHash);
    const use = cached ? usability(cached) : 'unusable';
    if (cached && use === 'stale') {
      // Served meanwhile; a line with the cause, no stack (an outage would repeat it).
      cache
        .shared(keyHash, () => verifyAndRemember(keyHash, 'refresh'))
        .catch((err: unknown) => logger.warn({ detail: describe(err) }, 'background verification failed'));
    }
    if (cached && use !== 'unusable') return cached;
    if (cache.isUnknown(keyHash)) return null;
    return cache.shared(keyHash, () => verifyAndRemember(keyHash));
  }

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const text = presentedKeyText(credentials);
      if (isJwtShaped(text)) throw authFailure('not_an_api_key');
      const key = toWellFormedKey(text);
      if (key === null) throw authFailure('malformed_key');
      credentials.onKeyPrefix?.(key.prefix);
      // A refusal is logged once, on the request's own line (prefix and reason).
      const verified = verifiedFor(key.keyHash);
      return principalFor(verified instanceof Promise ? await verified : verified, key, now());
    },

    /** Follows the key service's event stream: until then, nothing is cached. */
    start() {
      stream ??= keyService.followEvents({ onEvent, onConnectionChange });
    },

    async close() {
      const closing = stream;
      stream = undefined;
      cache.clear();
      organizationOfKey.clear();
      await closing?.close();
    },
  };
}

/**
 * The principal of each verification, made once: a cached verification serves many requests, each of
 * which keeps its principal until its usage is delivered.
 * Kept: −9.0 µs (7 %) per warm hit (compareBuilds --together, 16 rounds).
 */
const principals = new WeakMap<Verified, Principal>();

/** The caller, or the refusal (spec 3.1, 5.2, 5.3): 401 before 403; a revoked key answers as an unknown one. */
function principalFor(verified: Verified | null, key: WellFormedKey, now: Date): Principal {
  if (verified === null || verified.verification.key.revokedAt !== null) throw authFailure('invalid_key');
  const { key: record, organization } = verified.verification;
  if (record.expiresAt.getTime() <= now.getTime()) throw authFailure('expired_key');
  // Permission strings are case-sensitive.
  if (!record.permissions.includes('read')) throw authFailure('missing_permission');
  if (!ELIGIBLE_PLANS.has(organization.plan)) throw authFailure('plan_not_eligible');
  const { used, ceiling, periodEnd } = organization.usage;
  if (ceiling !== null && used >= ceiling) throw authFailure('usage_ceiling_reached');
  const made = principals.get(verified);
  // One verification is of one key hash, so of one key and its prefix.
  if (made !== undefined) return made;
  // Fields spelled out: Node 20's V8 builds an object spread followed by more fields slowly.
  const principal = {
    organizationId: record.organizationId,
    keyId: record.id,
    keyPrefix: key.prefix,
    usage: { used, ceiling, periodEnd, acknowledgedBefore: verified.acknowledgedBefore },
  };
  principals.set(verified, principal);
  return principal;
}
