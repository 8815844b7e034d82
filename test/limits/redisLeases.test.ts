import assert from 'node:assert/strict';
import { createRedisLeases, MAX_LEASE, type LeaseVerdict, type RedisLeases } from '../../src/limits/redisLeases.js';

/** A stand-in for the shared Redis reservoirs: atomic takes, answered a turn later like a round trip. */
function fakeReservoir(requests: number) {
  const left = new Map<string, number>();
  const calls: Array<{ key: string; units: number }> = [];
  return {
    calls,
    left: (key: string) => left.get(key) ?? requests,
    reserve(key: string, units: number): Promise<number> {
      calls.push({ key, units });
      const after = (left.get(key) ?? requests) - units;
      left.set(key, after);
      return new Promise((resolve) => setImmediate(() => resolve(after)));
    },
  };
}

/** A reservoir whose calls stay open until the test answers or fails them. */
function manualReservoir() {
  const calls: Array<{ units: number; answer: (left: number) => void; fail: (err: Error) => void }> = [];
  return {
    calls,
    reserve(_key: string, units: number): Promise<number> {
      return new Promise((answer, fail) => calls.push({ units, answer, fail }));
    },
  };
}

const takeAll = (leases: RedisLeases, count: number, key = 'org_a:1'): Promise<LeaseVerdict[]> =>
  Promise.all(Array.from({ length: count }, () => leases.take(key, 1)));

async function takeInTurn(leases: RedisLeases, count: number, key = 'org_a:1'): Promise<LeaseVerdict[]> {
  const verdicts: LeaseVerdict[] = [];
  for (let i = 0; i < count; i++) verdicts.push(await leases.take(key, 1));
  return verdicts;
}

const allowed = (verdicts: LeaseVerdict[]) => verdicts.filter((verdict) => verdict.allowed).length;

describe('redis leases (the request limit taken from Redis in batches)', () => {
  it('takes one unit first, then 1/32 of what is left, and single units near the end', async () => {
    const redis = fakeReservoir(1000);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const verdicts = await takeInTurn(leases, 1001);
    assert.equal(allowed(verdicts), 1000);
    const sizes = redis.calls.map((call) => call.units);
    assert.deepEqual(sizes.slice(0, 4), [1, 31, 30, 29]); // 999/32, 968/32, 938/32
    assert.ok(sizes.every((size, i) => i <= 1 || size <= sizes[i - 1]!), 'after the first, leases only shrink');
    let left = 1000;
    for (const size of sizes) {
      if (left < 64) assert.equal(size, 1, 'below 64 left every lease is one unit');
      left -= size;
    }
    assert.equal(left, 0);
    assert.ok(sizes.length < 200, `${sizes.length} calls for 1000 units`);
    // Redis said nothing is left: the denied requests were refused without asking again.
    assert.deepEqual(await leases.take('org_a:1', 1), { allowed: false, remaining: 0 });
    assert.equal(redis.calls.length, sizes.length);
  });

  it('renews a lease ahead once half of it is served, so a steady stream does not wait for Redis', async () => {
    const redis = manualReservoir();
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const first = leases.take('org_a:1', 1);
    await settle();
    redis.calls[0]!.answer(999);
    assert.equal((await first).allowed, true);
    const second = leases.take('org_a:1', 1);
    await settle();
    assert.deepEqual(redis.calls.map((call) => call.units), [1, 31]); // 999 / 32
    redis.calls[1]!.answer(999 - 31);
    assert.equal((await second).allowed, true);
    // 30 units left. Each take below is answered at once (a verdict, not a promise)…
    const atOnce = (verdict: LeaseVerdict | Promise<LeaseVerdict>): LeaseVerdict => {
      assert.ok(!(verdict instanceof Promise), 'served from the lease without waiting');
      return verdict;
    };
    for (let i = 0; i < 14; i++) atOnce(leases.take('org_a:1', 1));
    assert.equal(redis.calls.length, 2, 'more than half of the lease is still there: no call yet');
    // …and the take that leaves half of the lease (15 of 31) starts the next call in the background.
    atOnce(leases.take('org_a:1', 1));
    await settle();
    assert.deepEqual(redis.calls.map((call) => call.units), [1, 31, 30]); // 968 / 32
    redis.calls[2]!.answer(968 - 30);
    await settle();
    for (let i = 0; i < 45; i++) assert.equal(atOnce(leases.take('org_a:1', 1)).allowed, true);
  });

  it('caps a lease at MAX_LEASE units for a large allowance', async () => {
    const redis = fakeReservoir(1_000_000);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    await takeInTurn(leases, 4 * MAX_LEASE);
    const sizes = redis.calls.map((call) => call.units);
    assert.equal(sizes[0], 1);
    assert.ok(sizes.slice(1).every((size) => size === MAX_LEASE), `lease sizes ${sizes.join(', ')}`);
    // One lease ahead at most: the units taken never exceed what was served by more than a lease and a half.
    assert.ok(sizes.length <= 1 + 4 + 1, `${sizes.length} calls`);
  });

  it('reports what Redis left plus the unused units, which one instance sees count down exactly', async () => {
    const redis = fakeReservoir(100);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const verdicts = await takeInTurn(leases, 101);
    assert.deepEqual(
      verdicts.map((verdict) => verdict.remaining),
      [...Array.from({ length: 100 }, (_, i) => 99 - i), 0],
    );
  });

  it('serves requests that arrive together from one call sized to them', async () => {
    const redis = fakeReservoir(1000);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const verdicts = await takeAll(leases, 20);
    assert.deepEqual(redis.calls, [{ key: 'org_a:1', units: 20 }]);
    assert.equal(allowed(verdicts), 20);
    assert.deepEqual(
      verdicts.map((verdict) => verdict.remaining).sort((a, b) => b - a),
      Array.from({ length: 20 }, (_, i) => 999 - i),
    );
  });

  it('makes one call at a time per key; requests arriving meanwhile wait for it', async () => {
    const redis = manualReservoir();
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const first = takeAll(leases, 1);
    await settle();
    const waiting = MAX_LEASE + 44;
    const meanwhile = takeAll(leases, waiting);
    await settle();
    assert.deepEqual(redis.calls.map((call) => call.units), [1]);
    redis.calls[0]!.answer(999);
    await settle();
    // The waiting requests are at most MAX_LEASE units' worth per call, still one call at a time.
    assert.deepEqual(redis.calls.map((call) => call.units), [1, MAX_LEASE]);
    redis.calls[1]!.answer(999 - MAX_LEASE);
    await settle();
    assert.deepEqual(redis.calls.map((call) => call.units), [1, MAX_LEASE, 44]);
    redis.calls[2]!.answer(999 - waiting);
    assert.equal(allowed([...(await first), ...(await meanwhile)]), waiting + 1);
  });

  it('grants only the part of a lease that existed; the other waiters are refused without another call', async () => {
    const redis = fakeReservoir(3);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const verdicts = await takeAll(leases, 10);
    assert.equal(allowed(verdicts), 3);
    assert.deepEqual(redis.calls, [{ key: 'org_a:1', units: 10 }]);
    assert.deepEqual(await leases.take('org_a:1', 1), { allowed: false, remaining: 0 });
    assert.equal(redis.calls.length, 1);
  });

  it('never lets more than the allowance through between instances that share a reservoir', async () => {
    const redis = fakeReservoir(100);
    const instances = [0, 1, 2].map(() => createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 }));
    const verdicts = await Promise.all(
      Array.from({ length: 300 }, async (_, i) => {
        if (i % 2 === 1) await delayed(i % 7); // half of them arrive a few turns later
        return instances[i % 3]!.take('org_a:1', 1);
      }),
    );
    assert.ok(allowed(verdicts) <= 100, `${allowed(verdicts)} allowed`);
    // Only units left unused in a lease go unserved: with ≤ 100 left, at most 100/32 = 3
    // per instance beyond the requests that waited for them.
    assert.ok(allowed(verdicts) >= 100 - 3 * 3, `${allowed(verdicts)} allowed`);
  });

  it('starts a fresh lease in a new window and forgets the past window’s lease', async () => {
    const redis = fakeReservoir(1000);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    await takeInTurn(leases, 2, 'org_a:1'); // the second call leased 31: 30 are left unused
    assert.deepEqual(await leases.take('org_a:2', 2), { allowed: true, remaining: 999 });
    assert.deepEqual(redis.calls.slice(2), [{ key: 'org_a:2', units: 1 }]);
    // The past window's units were dropped with its lease: asking for that key again calls Redis.
    await leases.take('org_a:1', 1);
    assert.equal(redis.calls.length, 4);
  });

  it('fails the waiting requests when no lease arrives within the deadline, and asks again afterwards', async () => {
    const redis = manualReservoir();
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 20 });
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => leases.take('org_a:1', 1)));
    assert.deepEqual(outcomes.map((outcome) => outcome.status), Array(5).fill('rejected'));
    assert.equal(redis.calls.length, 1);
    // The stalled call is given up on: the next request makes a new one (made surely past the
    // deadline: a timer may fire a fraction of a millisecond before performance.now() agrees).
    await new Promise((resolve) => setTimeout(resolve, 5));
    const next = leases.take('org_a:1', 1);
    await settle();
    assert.equal(redis.calls.length, 2);
    redis.calls[1]!.answer(990);
    assert.equal((await next).allowed, true);
    // The late answer of the abandoned call still lands in the lease: Redis counted those units.
    redis.calls[0]!.answer(995);
    await settle();
    assert.equal((await leases.take('org_a:1', 1)).allowed, true);
    assert.equal(redis.calls.length, 2);
  });

  it('fails the waiting requests when the call fails, and asks again on the next request', async () => {
    const redis = manualReservoir();
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    const waiting = Promise.allSettled([leases.take('org_a:1', 1), leases.take('org_a:1', 1)]);
    await settle();
    redis.calls[0]!.fail(new Error('connection lost'));
    assert.deepEqual((await waiting).map((outcome) => outcome.status), ['rejected', 'rejected']);
    const next = leases.take('org_a:1', 1);
    await settle();
    redis.calls[1]!.answer(5);
    assert.deepEqual(await next, { allowed: true, remaining: 5 });
  });

  it('fails on a reply that is not a number', async () => {
    const leases = createRedisLeases({ reserve: async () => Number.NaN, deadlineMs: 1000 });
    await assert.rejects(async () => leases.take('org_a:1', 1), /unexpected reservoir NaN/);
  });

  it('starts every key afresh after clear()', async () => {
    const redis = fakeReservoir(1000);
    const leases = createRedisLeases({ reserve: redis.reserve, deadlineMs: 1000 });
    await takeInTurn(leases, 2);
    leases.clear();
    await leases.take('org_a:1', 1);
    assert.deepEqual(redis.calls.map((call) => call.units), [1, 31, 1]);
  });
});

/** Lets pending calls and answers run (a macrotask turn). */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function delayed(turns: number): Promise<void> {
  let chain = Promise.resolve();
  for (let i = 0; i < turns; i++) chain = chain.then(settle);
  return chain;
}
