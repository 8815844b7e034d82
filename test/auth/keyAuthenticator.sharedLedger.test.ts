import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { toApiError } from '../../src/errors.js';
import { LimiterUnavailable } from '../../src/limits/admission.js';
import type { UsageLedger } from '../../src/usage/usageLedger.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import { bearer, controlledKeyService, KEY } from './keyAuthenticatorHarness.js';

/**
 * The authenticator over a count that, like the one shared through Redis, can only be read
 * for an organization known before the verify is sent: what it hands to admission.
 */

/** A shared count holding `acknowledged` calls of org_s; notes for which organization it was read. */
function sharedCount(acknowledged: number, down = false) {
  const readFor: Array<string | undefined> = [];
  const ledger: Pick<UsageLedger, 'beforeVerify' | 'isNearCeiling'> = {
    async beforeVerify(organizationId) {
      readFor.push(organizationId);
      if (down) throw new LimiterUnavailable({ limit: 10, windowSeconds: 60 }, { cause: new Error('redis down') });
      return {
        acknowledgedFor: (answered) => (organizationId === answered ? acknowledged : null),
        end() {},
      };
    },
    isNearCeiling: () => false,
  };
  return { ledger, readFor };
}

describe('keyAuthenticator over a count read by organization (shared through Redis)', () => {
  let service: ReturnType<typeof controlledKeyService>;
  let authenticator: KeyAuthenticator | undefined;

  const build = (ledger: Pick<UsageLedger, 'beforeVerify' | 'isNearCeiling'>): KeyAuthenticator => {
    authenticator = createKeyAuthenticator({
      keyService: service.client,
      ledger,
      now: () => FIXED_NOW,
      logger: pino({ level: 'silent' }),
    });
    return authenticator;
  };

  beforeEach(() => {
    service = controlledKeyService();
    service.answer(KEY, { key: { organizationId: 'org_s' }, usage: { used: 10, ceiling: 1000 } });
  });
  afterEach(async () => {
    await authenticator?.close();
  });

  it('verifies a key it has not seen once more, knowing its organization, and hands over that reading', async () => {
    const { ledger, readFor } = sharedCount(7);
    const principal = await build(ledger).authenticate(bearer(KEY));
    assert.equal(service.calls, 2);
    assert.deepEqual(readFor, [undefined, 'org_s']);
    assert.equal(principal.usage?.acknowledgedBefore, 7);
    assert.equal(principal.usage?.ceiling, 1000);
    // Seen now: one verify, read for its organization first.
    await build(ledger).authenticate(bearer(KEY));
  });

  it('verifies once for an organization without a ceiling: nothing to read', async () => {
    service.answer(KEY, { key: { organizationId: 'org_s' }, usage: { ceiling: null } });
    const { ledger } = sharedCount(7);
    const principal = await build(ledger).authenticate(bearer(KEY));
    assert.equal(service.calls, 1);
    assert.equal(principal.usage?.ceiling, null);
  });

  it('answers 503 limiter_unavailable, not key_service_unavailable, when the count cannot be read', async () => {
    const { ledger } = sharedCount(0);
    await build(ledger).authenticate(bearer(KEY)); // the organization is known from now on
    const down = sharedCount(0, true);
    await assert.rejects(build(down.ledger).authenticate(bearer(KEY)), (err: unknown) => {
      const answered = toApiError(err);
      assert.equal(answered.status, 503);
      assert.equal(answered.reason, 'limiter_unavailable');
      assert.ok(Number(answered.headers['Retry-After']) > 0);
      return true;
    });
    assert.equal(down.readFor.length, 1);
  });
});
