import assert from 'node:assert/strict';
import Bottleneck from 'bottleneck';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createRequestLimiter, type ManagedRequestLimiter } from '../../src/limits/createRequestLimiter.js';
import { MAX_LEASE } from '../../src/limits/redisLeases.js';
import type { LimitDecision } from '../../src/limits/requestLimiter.js';
import { ApiError } from '../../src/errors.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';
import { skipWithoutRedis, startRedisServer, type RedisServer } from '../support/redisServer.js';

const WINDOW_START = Date.parse('2026-11-21T12:00:00.000Z');
/** The bound is 250 ms; the assertion leaves room for a busy machine. */
const FAST_MS = 750;

describe('request limit on Redis (many instances)', function () {
  let redis: RedisServer;
  let clock: number;
  const limiters: ManagedRequestLimiter[] = [];

  const newLimiter = async (requests = 3): Promise<ManagedRequestLimiter> => {
    const limiter = await createRequestLimiter({
      requests,
      windowSeconds: 60,
      redisUrl: redis.url,
      logger: pino({ level: 'silent' }),
      now: () => new Date(clock),
    });
    limiters.push(limiter);
    return limiter;
  };

  /** Resolves once the limiter is connected (a fresh instance connects in a few ms). */
  const connected = async (limiter: ManagedRequestLimiter): Promise<void> => {
    const deadline = Date.now() + 5000;
    while (!limiter.available()) {
      if (Date.now() > deadline) throw new Error('limiter never connected');
      await delay(10);
    }
  };

  /** Units asked for by each incrementReservoir call (the lease calls), from every limiter. */
  const leaseCalls: number[] = [];
  const incrementReservoir = Bottleneck.prototype.incrementReservoir;

  // An unhandled rejection ends a gateway process; none may come out of these failures.
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
    process.on('unhandledRejection', onUnhandled);
    Bottleneck.prototype.incrementReservoir = function (this: Bottleneck, incrementBy: number) {
      leaseCalls.push(-incrementBy);
      return incrementReservoir.call(this, incrementBy);
    };
  });
  after(async () => {
    Bottleneck.prototype.incrementReservoir = incrementReservoir;
    process.off('unhandledRejection', onUnhandled);
    await redis?.stop();
  });
  beforeEach(() => {
    clock = WINDOW_START + 15_000;
    leaseCalls.length = 0;
  });
  afterEach(async () => {
    await Promise.all(limiters.splice(0).map((limiter) => limiter.close()));
    if (redis) {
      redis.resume();
      await redis.command('FLUSHALL').catch(() => undefined);
    }
    await delay(20);
    assert.deepEqual(unhandled.splice(0), []);
  });

  it('two app instances on one Redis let exactly the allowance through together', async () => {
    const first = await newLimiter(5);
    const second = await newLimiter(5);
    await Promise.all([connected(first), connected(second)]);
    const servers = await Promise.all(
      [first, second].map((limiter) =>
        listen(createApp(fakeServices({ limiter, platform: stubPlatform(() => keywordsData()) }))),
      ),
    );
    try {
      const responses = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          fetch(`${servers[i % 2]!.url}/v1/api/keywords?site=example.com`, {
            headers: { authorization: 'Bearer key-org-a' },
          }),
        ),
      );
      await Promise.all(responses.map((res) => res.arrayBuffer()));
      const ok = responses.filter((res) => res.status === 200);
      const limited = responses.filter((res) => res.status === 429);
      assert.equal(ok.length, 5);
      assert.equal(limited.length, 7);
      for (const res of limited) {
        assert.equal(res.headers.get('retry-after'), '45');
        assert.equal(res.headers.get('ratelimit'), '"per-organization";r=0;t=45');
      }
      const remaining = ok.map((res) => res.headers.get('ratelimit')).sort();
      assert.deepEqual(remaining, [0, 1, 2, 3, 4].map((r) => `"per-organization";r=${r};t=45`));
      // Another organization still has its whole allowance, on either instance.
      assert.equal((await first.take('org_b')).remaining, 4);
      assert.equal((await second.take('org_b')).remaining, 3);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });

  it('starts a new shared allowance when the window turns', async () => {
    const first = await newLimiter(2);
    const second = await newLimiter(2);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await first.take('org_a')).allowed, true);
    assert.equal((await second.take('org_a')).allowed, true);
    assert.equal((await first.take('org_a')).allowed, false);
    clock = WINDOW_START + 60_000;
    const fresh = await second.take('org_a');
    assert.deepEqual(fresh, { allowed: true, limit: 2, remaining: 1, resetSeconds: 60, windowSeconds: 60 });
  });

  it('never lets more than the allowance through between two instances under concurrent load', async () => {
    const first = await newLimiter(100);
    const second = await newLimiter(100);
    await Promise.all([connected(first), connected(second)]);
    const takeSplit = (organizationId: string, count: number) =>
      Promise.all(Array.from({ length: count }, (_, i) => (i % 2 === 0 ? first : second).take(organizationId)));
    // All at once (leases sized by the waiting requests), and in rounds of one request
    // per instance (leases sized by what is left, shrinking to single units near the end).
    const atOnce = await takeSplit('org_a', 300);
    const inRounds: LimitDecision[] = [];
    for (let round = 0; round < 150; round++) inRounds.push(...(await takeSplit('org_b', 2)));
    for (const decisions of [atOnce, inRounds]) {
      const allowed = decisions.filter((decision) => decision.allowed).length;
      assert.ok(allowed <= 100, `${allowed} allowed`);
      // Only units left unused in a lease go unserved: with ≤ 100 left, at most 100/32 = 3
      // per instance beyond the requests that waited for them (2 instances × 3).
      assert.ok(allowed >= 100 - 2 * 3, `${allowed} allowed`);
    }
    assert.deepEqual(leaseCalls.slice(-3), [1, 1, 1], 'near the end leases are single units');
    const spent = { allowed: false, limit: 100, remaining: 0, resetSeconds: 45, windowSeconds: 60 };
    assert.deepEqual(await first.take('org_a'), spent);
    assert.deepEqual(await second.take('org_b'), spent);
  });

  it('takes a large allowance from Redis in leases: far fewer calls than requests', async () => {
    const first = await newLimiter(100_000);
    const second = await newLimiter(100_000);
    await Promise.all([connected(first), connected(second)]);
    for (let round = 0; round < 20; round++) {
      const decisions = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? first : second).take('org_a')),
      );
      assert.ok(decisions.every((decision) => decision.allowed));
    }
    // 1000 requests per instance: one first lease, then leases of at most MAX_LEASE, and one renewed ahead.
    const mostCalls = 2 * (1 + Math.ceil(999 / MAX_LEASE) + 1);
    assert.ok(leaseCalls.length <= mostCalls, `${leaseCalls.length} Redis calls for 2000 requests`);
    // The units really came from the shared reservoir: a third instance sees them gone.
    const third = await newLimiter(100_000);
    await connected(third);
    const seen = await third.take('org_a');
    assert.ok(seen.remaining <= 100_000 - 2000 - 1, `remaining ${seen.remaining}`);
  });

  it('serves the first requests of a window, arriving together, from a single lease call', async () => {
    const limiter = await newLimiter(1000);
    await connected(limiter);
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.take('org_a')));
    assert.deepEqual(leaseCalls, [20]);
    assert.deepEqual(
      decisions.map((decision) => decision.remaining).sort((a, b) => b - a),
      Array.from({ length: 20 }, (_, i) => 999 - i),
    );
  });

  it('drops the lease when the window turns and starts the new window with a fresh one', async () => {
    const limiter = await newLimiter(1000);
    await connected(limiter);
    assert.equal((await limiter.take('org_a')).remaining, 999);
    assert.equal((await limiter.take('org_a')).remaining, 998);
    assert.deepEqual(leaseCalls, [1, 31]); // 999/32: 30 units are left in the lease
    clock = WINDOW_START + 60_000;
    const fresh = await limiter.take('org_a');
    assert.deepEqual(fresh, { allowed: true, limit: 1000, remaining: 999, resetSeconds: 60, windowSeconds: 60 });
    assert.deepEqual(leaseCalls, [1, 31, 1]);
  });

  it('answers 503 while Redis is down even when the lease still holds units, and drops those units', async () => {
    const limiter = await newLimiter(1000);
    await connected(limiter);
    await limiter.take('org_a');
    await limiter.take('org_a'); // leases 31 units, 30 of them left
    await redis.kill();
    await eventually(async () => assert.equal(limiter.available(), false), 5000);
    await assert.rejects(limiter.take('org_a'), (err: unknown) => err instanceof ApiError && err.status === 503);
    await redis.restart();
    // The units held when the connection dropped are gone with it: the restarted Redis
    // starts the window over, and the first request back takes a fresh lease from there.
    // (Units kept from before would have answered 997: 968 left in Redis + 29 still held.)
    const back = await eventually(() => limiter.take('org_a'), 5000);
    assert.equal(back.remaining, 999);
  });

  it('answers 503 fast, never unlimited, while Redis is down, and recovers within 5 s of its return', async () => {
    const limiter = await newLimiter(100);
    await connected(limiter);
    assert.equal((await limiter.take('org_a')).remaining, 99);
    const server = await listen(
      createApp(fakeServices({ limiter, platform: stubPlatform(() => keywordsData()) })),
    );
    try {
      await redis.kill();
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const res = await fetch(`${server.url}/v1/api/keywords?site=example.com`, {
          headers: { authorization: 'Bearer key-org-a' },
        });
        const elapsed = performance.now() - started;
        assert.equal(res.status, 503);
        assert.equal(res.headers.get('retry-after'), '2');
        assert.equal(res.headers.get('ratelimit'), '"per-organization";r=0;t=2');
        const body = (await res.json()) as { errors: Array<{ code: string; reason?: string }> };
        assert.deepEqual(body.errors[0], {
          code: 'SERVICE_UNAVAILABLE',
          message: 'The request limit cannot be enforced right now. Retry later.',
          reason: 'limiter_unavailable',
        });
        assert.ok(elapsed < FAST_MS, `503 took ${Math.round(elapsed)} ms`);
      }
      assert.equal(limiter.available(), false);

      await redis.restart();
      const back = Date.now();
      const decision = await eventually(() => limiter.take('org_a'), 5000);
      assert.ok(Date.now() - back < 5000);
      // The restarted Redis lost every count: the window's allowance starts over.
      assert.equal(decision.remaining, 99);
      assert.equal(limiter.available(), true);
    } finally {
      await server.close();
    }
  });

  it('answers 503 fast while Redis stalls, and recovers when it answers again', async () => {
    const limiter = await newLimiter(10);
    await connected(limiter);
    assert.equal((await limiter.take('org_a')).remaining, 9);
    redis.pause();
    // Requests waiting together share one lease call, and all get 503 when it stalls.
    const callsBefore = leaseCalls.length;
    const started = performance.now();
    const waiting = await Promise.allSettled(Array.from({ length: 5 }, () => limiter.take('org_a')));
    assert.ok(performance.now() - started < FAST_MS, `503 took ${Math.round(performance.now() - started)} ms`);
    assert.ok(waiting.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof ApiError));
    assert.equal(leaseCalls.length, callsBefore + 1);
    // An organization known before the stall, and one whose limiter is set up during it.
    for (const organizationId of ['org_a', 'org_new']) {
      const started = performance.now();
      await assert.rejects(limiter.take(organizationId), (err: unknown) => {
        return err instanceof ApiError && err.status === 503 && err.headers['Retry-After'] === '2';
      });
      const elapsed = performance.now() - started;
      assert.ok(elapsed < FAST_MS, `503 took ${Math.round(elapsed)} ms`);
    }
    redis.resume();
    const known = await eventually(() => limiter.take('org_a'), 5000);
    const fresh = await eventually(() => limiter.take('org_new'), 5000);
    // Calls abandoned during the stall may still be counted once Redis catches up:
    // the limit errs on the side of fewer requests, never more.
    assert.ok(known.allowed && known.remaining <= 8, `remaining ${known.remaining}`);
    assert.ok(fresh.allowed && fresh.remaining <= 9, `remaining ${fresh.remaining}`);
  });

  it('keeps counting after Redis lost its scripts (SCRIPT FLUSH: NOSCRIPT)', async () => {
    const first = await newLimiter(5);
    const second = await newLimiter(5);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await first.take('org_a')).remaining, 4);
    assert.equal((await second.take('org_a')).remaining, 3);
    assert.equal(await redis.command('SCRIPT', 'FLUSH'), '+OK');
    assert.equal((await first.take('org_a')).remaining, 2);
    assert.equal((await second.take('org_a')).remaining, 1);
    assert.equal((await first.take('org_a')).remaining, 0);
    assert.equal((await second.take('org_a')).allowed, false);
  });

  it('rebuilds the shared count after Redis lost its keys (restart without persistence)', async () => {
    const first = await newLimiter(5);
    const second = await newLimiter(5);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await first.take('org_a')).remaining, 4);
    assert.equal((await second.take('org_a')).remaining, 3);
    assert.equal(await redis.command('FLUSHALL'), '+OK');
    // Both instances repair the same keys instead of failing on them forever.
    assert.equal((await first.take('org_a')).remaining, 4);
    assert.equal((await second.take('org_a')).remaining, 3);
    assert.equal((await first.take('org_a')).remaining, 2);
  });

  it('answers 503 when started while Redis is unreachable, then works once it is reachable', async () => {
    await redis.kill();
    const limiter = await newLimiter(3);
    await assert.rejects(limiter.take('org_a'), (err: unknown) => err instanceof ApiError && err.status === 503);
    assert.equal(limiter.available(), false);
    await redis.restart();
    const decision = await eventually(() => limiter.take('org_a'), 5000);
    // The denied request took nothing from the allowance.
    assert.equal(decision.remaining, 2);
  });
});

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries `attempt` until it resolves, for at most `withinMs`. */
async function eventually<T>(attempt: () => Promise<T>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await attempt();
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err;
      await delay(50);
    }
  }
}
