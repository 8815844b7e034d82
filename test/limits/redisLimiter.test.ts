import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createRequestLimiter, type ManagedRequestLimiter } from '../../src/limits/createRequestLimiter.js';
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

  // An unhandled rejection ends a gateway process; none may come out of these failures.
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
    process.on('unhandledRejection', onUnhandled);
  });
  after(async () => {
    process.off('unhandledRejection', onUnhandled);
    await redis?.stop();
  });
  beforeEach(() => {
    clock = WINDOW_START + 15_000;
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
