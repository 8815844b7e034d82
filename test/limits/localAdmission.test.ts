import assert from 'node:assert/strict';
import type { CallerUsage } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';

/** Admission in one process, called directly: the limit and the ceiling together, and what goes back. */

const NOW = Date.parse('2026-11-21T12:00:15.000Z');
const periodEnd = new Date('2026-12-01T00:00:00.000Z');
const ORG = 'org_local';

describe('admission in process', () => {
  const usage = (used: number, acknowledgedBefore: number): CallerUsage => ({
    used,
    ceiling: 100,
    periodEnd,
    acknowledgedBefore,
  });

  it('admits up to the ceiling, counting calls in flight and waiting, and takes no unit of the limit beyond it', async () => {
    const admission = createLocalAdmission({ requests: 50, windowSeconds: 60 });
    const grants = [];
    for (let i = 0; i < 10; i++) grants.push(await admission.take(ORG, NOW, usage(90, 0)));
    assert.ok(grants.every((grant) => grant.allowed));
    const refused = await admission.take(ORG, NOW, usage(90, 0));
    assert.equal(refused.ceilingReached, true);
    assert.equal(refused.remaining, 40, 'the ceiling refusal took no unit of the limit');
    // A call that fails gives its place back; one counted keeps it until acknowledged.
    grants[0]?.giveBack(false);
    grants[0]?.giveBack(false); // once
    for (const grant of grants.slice(1)) grant.keep();
    assert.equal((await admission.take(ORG, NOW, usage(90, 0))).allowed, true);
    assert.equal((await admission.take(ORG, NOW, usage(90, 0))).ceilingReached, true);
  });

  it('counts acknowledgements since the verify was sent as not included, until a verification includes them', async () => {
    const admission = createLocalAdmission({ requests: 50, windowSeconds: 60 });
    for (let i = 0; i < 5; i++) (await admission.take(ORG, NOW, usage(95, 0))).keep();
    assert.equal((await admission.take(ORG, NOW, usage(95, 0))).ceilingReached, true);
    admission.ledger.acknowledged(ORG, 5);
    // The old verification does not know whether its `used` holds them: still full.
    assert.equal((await admission.take(ORG, NOW, usage(95, 0))).ceilingReached, true);
    // A verify sent after the acknowledgement: `used` holds them; acknowledgements during it do not count as included.
    const sent = await admission.ledger.beforeVerify(undefined);
    admission.ledger.adopted(ORG, 2);
    admission.ledger.acknowledged(ORG, 2);
    const acknowledgedBefore = sent.acknowledgedFor(ORG);
    sent.end();
    assert.equal(acknowledgedBefore, 5);
    // `used` 95 holds the 5; the 2 acknowledged while it was out may not be there: 100 − 95 − 2 = 3 calls of room.
    const after = usage(95, acknowledgedBefore ?? 0);
    const results = [];
    for (let i = 0; i < 4; i++) results.push((await admission.take(ORG, NOW, after)).allowed);
    assert.deepEqual(results, [true, true, true, false]);
    assert.equal(admission.ledger.isNearCeiling(ORG), true);
  });

  it('says a refusal is in doubt while calls on their way to the key service may be in `used` too', async () => {
    const admission = createLocalAdmission({ requests: 50, windowSeconds: 60 });
    for (let i = 0; i < 8; i++) (await admission.take(ORG, NOW, usage(90, 0))).keep();
    const inFlight = [await admission.take(ORG, NOW, usage(90, 0)), await admission.take(ORG, NOW, usage(90, 0))];
    const full = await admission.take(ORG, NOW, usage(90, 0));
    assert.deepEqual([full.ceilingReached, full.ceilingInDoubt], [true, false], 'none on their way: surely full');
    for (const grant of inFlight) grant.giveBack(false);
    // 8 go out and the key service counts them: a verification answered now says 98 and they still wait here.
    admission.ledger.sending(ORG, 8);
    const doubtful = await admission.take(ORG, NOW, usage(98, 0));
    assert.deepEqual([doubtful.ceilingReached, doubtful.ceilingInDoubt], [true, true]);
    // Acknowledged since that verify: still in doubt for it; a verification sent now includes them exactly.
    admission.ledger.acknowledged(ORG, 8);
    assert.equal((await admission.take(ORG, NOW, usage(98, 0))).ceilingInDoubt, true);
    const results = [];
    for (let i = 0; i < 3; i++) results.push((await admission.take(ORG, NOW, usage(98, 8))).allowed);
    assert.deepEqual(results, [true, true, false]);
  });

  it("gives the limit's unit back only when asked to (the gateway's own failure)", async () => {
    const admission = createLocalAdmission({ requests: 3, windowSeconds: 60 });
    (await admission.take(ORG, NOW)).giveBack(true);
    (await admission.take(ORG, NOW)).giveBack(false);
    const third = await admission.take(ORG, NOW);
    assert.equal(third.remaining, 1);
    third.keep();
    assert.equal((await admission.take(ORG, NOW)).remaining, 0);
    assert.equal((await admission.take(ORG, NOW)).allowed, false);
  });
});
