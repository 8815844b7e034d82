import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { toApiError } from '../../src/errors.js';
import {
  type ClaimOutcome,
  createUsageLedger,
  type LocalUsageLedger,
  type UsageLedger,
} from '../../src/usage/usageLedger.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import { bearer, controlledKeyService, KEY, refusedWith } from './keyAuthenticatorHarness.js';

/**
 * The authenticator over a ledger whose claims answer asynchronously, as the one shared
 * through Redis does: what it does with each outcome of a claim.
 */

type Outcome = 'admitted' | 'refused' | 'inDoubt' | 'unseeded';

/** A ledger that answers claims with the outcomes given, in order, and notes what it was asked. */
function scriptedLedger(outcomes: Outcome[]) {
  const local: LocalUsageLedger = createUsageLedger();
  const seen = { snapshotsFor: [] as Array<string | undefined>, claims: 0, settled: 0 };
  const ledger: UsageLedger = {
    ...local,
    openSnapshot(organizationId) {
      seen.snapshotsFor.push(organizationId);
      return local.openSnapshot(organizationId);
    },
    async claim(request): Promise<ClaimOutcome> {
      seen.claims += 1;
      const outcome = outcomes.shift() ?? 'admitted';
      await Promise.resolve();
      if (outcome === 'admitted') return { admission: local.admit(request.organizationId, false) };
      return { refusal: outcome };
    },
    async settled() {
      seen.settled += 1;
    },
  };
  return { ledger, seen };
}

describe('keyAuthenticator over a ledger that answers asynchronously (shared count)', () => {
  let service: ReturnType<typeof controlledKeyService>;
  let authenticator: KeyAuthenticator | undefined;

  const build = (ledger: UsageLedger): KeyAuthenticator => {
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

  it('admits with the place the ledger gave', async () => {
    const { ledger, seen } = scriptedLedger(['admitted']);
    const principal = await build(ledger).authenticate(bearer(KEY));
    assert.ok(principal.admission);
    assert.equal(seen.claims, 1);
  });

  it('verifies again, knowing the organization, when the shared count has no verification of the period', async () => {
    const { ledger, seen } = scriptedLedger(['unseeded', 'admitted']);
    const principal = await build(ledger).authenticate(bearer(KEY));
    assert.ok(principal.admission);
    assert.equal(service.calls, 2);
    // The first verify could not know whose key it was; the second marks that organization's count.
    assert.deepEqual(seen.snapshotsFor, [undefined, 'org_s']);
    assert.equal(seen.settled, 0);
  });

  it('answers 503 to retry, not a ceiling refusal, when the count is still not seeded after verifying again', async () => {
    const { ledger } = scriptedLedger(['unseeded', 'unseeded']);
    await assert.rejects(build(ledger).authenticate(bearer(KEY)), (err: unknown) => {
      const answered = toApiError(err);
      assert.equal(answered.status, 503);
      assert.equal(answered.reason, 'key_service_unavailable');
      assert.ok(Number(answered.headers['Retry-After']) > 0);
      return true;
    });
  });

  it('waits for the calls in doubt and verifies again before refusing', async () => {
    const { ledger, seen } = scriptedLedger(['inDoubt', 'admitted']);
    const principal = await build(ledger).authenticate(bearer(KEY));
    assert.ok(principal.admission);
    assert.equal(seen.settled, 1);
    assert.equal(service.calls, 2);
  });

  it('refuses 403 usage_ceiling_reached when the ledger finds no room', async () => {
    const { ledger } = scriptedLedger(['refused']);
    await assert.rejects(build(ledger).authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
  });
});
