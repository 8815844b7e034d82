import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { type Admission, type LimitDecision, LimiterUnavailable } from '../../src/limits/admission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually as eventuallyTrue } from '../support/eventually.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';

const WINDOW_START = Date.parse('2026-11-21T12:00:00.000Z');
/** The bound is 250 ms; the assertion leaves room for a busy machine. */
const FAST_MS = 750;
const silent = pino({ level: 'silent' });

describe('request limit on Redis (many instances)', () => {
  let redis: RedisServer;
  let clock: number;
  const connections: RedisConnection[] = [];
  const limiters: Admission[] = [];

  /** One gateway instance's limiter, on its own connection as a separate process would have. */
  const newLimiter = (requests = 3): Admission => {
    const connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    connections.push(connection);
    const limiter = createRedisAdmission({
      requests,
      windowSeconds: 60,
      redis: connection,
      logger: silent,
      now: () => clock,
    });
    limiters.push(limiter);
    return limiter;
  };
  /** Script calls Redis has run so far (EVALSHA, and EVAL after a NOSCRIPT). */
  const scriptCalls = async () => {
    const stats = await withClient(redis.port, (client) => client.info('commandstats'));
    return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
  };
  const take = (limiter: Admission, organizationId: string) => limiter.take(organizationId, clock);
  const serve = (limiter: Admission) =>
    listen(
      createApp(
        fakeServices({ admission: limiter, now: () => new Date(clock), platform: stubPlatform(() => keywordsData()) }),
      ),
    );
  const get = (url: string, token = 'key-org-a') =>
    fetch(`${url}/v1/api/keywords?site=example.com`, { headers: { authorization: `Bearer ${token}` } });

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
    for (const connection of connections.splice(0)) closeRedis(connection);
    if (redis) {
      redis.resume();
      await redis.command('FLUSHALL').catch(() => undefined);
    }
    await delay(20);
    assert.deepEqual(unhandled.splice(0), []);
  });

  it('three app instances on one Redis let exactly the allowance through under 150 concurrent clients', async () => {
    const instances = [newLimiter(40), newLimiter(40), newLimiter(40)];
    await Promise.all(instances.map(connected));
    const servers = await Promise.all(instances.map(serve));
    try {
      // On a loaded machine a Redis call can miss its command timeout: that request answers 503 and is
      // sent again, as a client would; what Redis granted the abandoned call is served by the next one.
      const answered = async (url: string) => {
        let res = await get(url);
        for (let attempt = 0; res.status === 503 && attempt < 20; attempt++) {
          await res.arrayBuffer();
          res = await get(url);
        }
        return res;
      };
      const responses = await Promise.all(Array.from({ length: 150 }, (_, i) => answered(servers[i % 3]!.url)));
      await Promise.all(responses.map((res) => res.arrayBuffer()));
      const ok = responses.filter((res) => res.status === 200);
      const limited = responses.filter((res) => res.status === 429);
      assert.equal(ok.length, 40);
      assert.equal(limited.length, 110);
      for (const res of limited) {
        assert.equal(res.headers.get('retry-after'), '45');
        assert.equal(res.headers.get('ratelimit'), '"per-organization";r=0;t=45');
        assert.equal(res.headers.get('ratelimit-policy'), '"per-organization";q=40;w=60');
      }
      // Every admitted request saw its own place in the shared count.
      const remaining = ok.map((res) => res.headers.get('ratelimit')).sort();
      assert.deepEqual(remaining, Array.from({ length: 40 }, (_, r) => `"per-organization";r=${r};t=45`).sort());
      // Another organization still has its whole allowance, on any instance.
      assert.equal((await take(instances[2]!, 'org_b')).remaining, 39);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });

  it('never admits more than the allowance, nor fewer, for many organizations at once', async () => {
    const instances = [newLimiter(50), newLimiter(50), newLimiter(50)];
    await Promise.all(instances.map(connected));
    const organizations = Array.from({ length: 20 }, (_, i) => `org_${i}`);
    const decisions = await Promise.all(
      Array.from({ length: 1600 }, (_, i) => take(instances[i % 3]!, organizations[i % 20]!)),
    );
    for (const [index, organizationId] of organizations.entries()) {
      const allowed = decisions.filter((decision, i) => i % 20 === index && decision.allowed).length;
      assert.equal(allowed, 50, organizationId);
    }
  });

  it('asks Redis once for the requests of one organization arriving together, granting each whole', async () => {
    const limiter = newLimiter(60);
    await connected(limiter);
    await take(limiter, 'org_warm'); // loads the script
    const before = await scriptCalls();
    const decisions = await Promise.all(Array.from({ length: 100 }, () => take(limiter, 'org_a')));
    assert.equal((await scriptCalls()) - before, 1);
    assert.equal(decisions.filter((decision) => decision.allowed).length, 60);
    assert.deepEqual(
      decisions.filter((decision) => decision.allowed).map((decision) => decision.remaining),
      Array.from({ length: 60 }, (_, i) => 59 - i),
    );
  });

  it('serves most of a large allowance from leases: far fewer Redis calls than requests', async () => {
    const limiter = newLimiter(100_000);
    await connected(limiter);
    const before = await scriptCalls();
    for (let round = 0; round < 40; round++) {
      const decisions = await Promise.all(Array.from({ length: 50 }, () => take(limiter, 'org_a')));
      assert.ok(decisions.every((decision) => decision.allowed));
    }
    const calls = (await scriptCalls()) - before;
    assert.ok(calls <= 2000 / 256 + 40 / 2, `${calls} script calls for 2000 requests`);
    // The units came from the shared count: another instance sees them gone.
    const other = newLimiter(100_000);
    await connected(other);
    const seen = await take(other, 'org_a');
    assert.ok(seen.remaining <= 100_000 - 2000 - 1, `remaining ${seen.remaining}`);
  });

  it('leaves at most 1/32 of what was left unused in an instance whose traffic stopped', async () => {
    const [busy, stopped] = [newLimiter(100), newLimiter(100)];
    await Promise.all([connected(busy), connected(stopped)]);
    for (let round = 0; round < 10; round++) {
      await Promise.all([take(busy, 'org_a'), take(stopped, 'org_a')]);
    }
    let admitted = 20;
    for (let i = 0; i < 200; i++) if ((await take(busy, 'org_a')).allowed) admitted += 1;
    assert.ok(admitted <= 100, `${admitted} admitted`);
    assert.ok(admitted >= 100 - Math.floor(100 / 32), `${admitted} admitted`);
  });

  it('at the default limit, keeps at most 1.5 leases unused per instance from another, for about a second: the window admits exactly 600', async () => {
    const [holder, other] = [newLimiter(600), newLimiter(600)];
    await Promise.all([connected(holder), connected(other)]);
    // The holder's second call leases 1/32 of what is left; its traffic then stops.
    for (let i = 0; i < 3; i++) assert.equal((await take(holder, 'org_leases')).allowed, true);
    let admitted = 3;
    while ((await take(other, 'org_leases')).allowed) admitted += 1;
    const held = 600 - admitted;
    assert.ok(held >= 1 && held <= 27, `${held} units held unused by the other instance`);
    // Unused a second, they go back: the rest of the window is served elsewhere.
    for (const until = Date.now() + 5000; admitted < 600 && Date.now() < until; ) {
      if ((await take(other, 'org_leases')).allowed) admitted += 1;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(admitted, 600);
    assert.equal((await take(other, 'org_leases')).allowed, false);
  });

  it('starts a new shared allowance when the window turns', async () => {
    const first = newLimiter(2);
    const second = newLimiter(2);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await take(first, 'org_a')).allowed, true);
    assert.equal((await take(second, 'org_a')).allowed, true);
    assert.equal((await take(first, 'org_a')).allowed, false);
    clock = WINDOW_START + 60_000;
    const { allowed, limit, remaining, resetSeconds, windowSeconds } = await take(second, 'org_a');
    assert.deepEqual(
      { allowed, limit, remaining, resetSeconds, windowSeconds },
      { allowed: true, limit: 2, remaining: 1, resetSeconds: 60, windowSeconds: 60 },
    );
  });

  it('keeps the window key only as long as the window, plus a margin for clock skew', async () => {
    const limiter = newLimiter(5);
    await connected(limiter);
    await take(limiter, 'org_a');
    const ttl = Number((await redis.command('PTTL', `gateway:{org_a}:limit:${WINDOW_START / 60_000}`)).slice(1));
    assert.ok(ttl > 60_000 && ttl <= 70_000, `ttl ${ttl}`);
  });

  it('answers 503 fast, never unlimited, while Redis is down, and recovers within 5 s of its return', async () => {
    const limiter = newLimiter(100);
    await connected(limiter);
    assert.equal((await take(limiter, 'org_a')).remaining, 99);
    const server = await serve(limiter);
    try {
      await redis.kill();
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        const res = await get(server.url);
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
      const decision = await eventually(() => take(limiter, 'org_a'), 5000);
      assert.ok(Date.now() - back < 5000);
      // The restarted Redis lost every count; this instance added back the one it admitted.
      assert.equal(decision.remaining, 98);
      assert.equal(limiter.available(), true);
    } finally {
      await server.close();
    }
  });

  it('answers 503 fast while Redis stalls, and recovers when it answers again', async () => {
    const limiter = newLimiter(10);
    await connected(limiter);
    assert.equal((await take(limiter, 'org_a')).remaining, 9);
    redis.pause();
    for (const organizationId of ['org_a', 'org_new']) {
      const started = performance.now();
      const waiting = await Promise.allSettled(Array.from({ length: 5 }, () => take(limiter, organizationId)));
      const elapsed = performance.now() - started;
      assert.ok(elapsed < FAST_MS, `503 took ${Math.round(elapsed)} ms`);
      assert.ok(
        waiting.every((outcome) => outcome.status === 'rejected' && outcome.reason instanceof LimiterUnavailable),
      );
    }
    redis.resume();
    const known = await eventually(() => take(limiter, 'org_a'), 5000);
    const fresh = await eventually(() => take(limiter, 'org_new'), 5000);
    // Calls abandoned during the stall may still be counted once Redis catches up:
    // the limit errs on the side of fewer requests, never more.
    assert.ok(known.allowed && known.remaining <= 8, `remaining ${known.remaining}`);
    assert.ok(fresh.allowed && fresh.remaining <= 9, `remaining ${fresh.remaining}`);
  });

  it('keeps counting after Redis lost its scripts (SCRIPT FLUSH: NOSCRIPT)', async () => {
    const first = newLimiter(5);
    const second = newLimiter(5);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await take(first, 'org_a')).remaining, 4);
    assert.equal((await take(second, 'org_a')).remaining, 3);
    assert.equal(await redis.command('SCRIPT', 'FLUSH'), '+OK');
    assert.equal((await take(first, 'org_a')).remaining, 2);
    assert.equal((await take(second, 'org_a')).remaining, 1);
    assert.equal((await take(first, 'org_a')).remaining, 0);
    assert.equal((await take(second, 'org_a')).allowed, false);
  });

  it('adds back what each instance admitted when Redis lost its keys, so the window does not start over', async () => {
    const first = newLimiter(5);
    const second = newLimiter(5);
    await Promise.all([connected(first), connected(second)]);
    assert.equal((await take(first, 'org_a')).remaining, 4);
    assert.equal((await take(second, 'org_a')).remaining, 3);
    assert.equal((await take(second, 'org_a')).remaining, 2);
    assert.equal(await redis.command('FLUSHALL'), '+OK');
    // Each instance's next call adds back its own admissions before taking.
    assert.equal((await take(first, 'org_a')).remaining, 3);
    assert.equal((await take(second, 'org_a')).remaining, 0);
    assert.equal((await take(first, 'org_a')).allowed, false);
  });

  it('keeps a window within 10 % of its allowance when Redis restarts empty inside it, under load from three instances', async () => {
    const allowance = 600;
    const instances = [newLimiter(allowance), newLimiter(allowance), newLimiter(allowance)];
    await Promise.all(instances.map(connected));
    const servers = await Promise.all(instances.map(serve));
    const statuses = new Map<number, number>();
    let stop = false;
    let sent = 0;
    // 60 clients, each sending one request after another to one of the three instances.
    const client = async (index: number) => {
      while (!stop) {
        const res = await get(servers[index % 3]!.url);
        await res.arrayBuffer();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        sent += 1;
        if (sent % 50 === 0) await delay(5);
      }
    };
    const clients = Array.from({ length: 60 }, (_, i) => client(i));
    try {
      await eventuallyTrue('half the allowance admitted', () => (statuses.get(200) ?? 0) >= allowance / 2, 20_000);
      await redis.restart();
      // Every instance is back within 5 s, and then the window is spent.
      await eventuallyTrue('200 refused', () => (statuses.get(429) ?? 0) >= 200, 20_000);
    } finally {
      stop = true;
      await Promise.all(clients);
      await Promise.all(servers.map((server) => server.close()));
    }
    const admitted = statuses.get(200) ?? 0;
    assert.ok(admitted <= allowance * 1.1, `${admitted} admitted, allowance ${allowance}`);
    // Calls abandoned at the command timeout around the restart may still have been counted:
    // the limit errs on the side of fewer requests, never more.
    assert.ok(admitted >= allowance * 0.9, `${admitted} admitted, allowance ${allowance}`);
    assert.deepEqual(
      [...statuses.keys()].sort(),
      [200, 429, 503].filter((status) => statuses.has(status)),
    );
  });

  it('answers 503 when started while Redis is unreachable, then works once it is reachable', async () => {
    await redis.kill();
    const limiter = newLimiter(3);
    await assert.rejects(async () => take(limiter, 'org_a'), LimiterUnavailable);
    assert.equal(limiter.available(), false);
    await redis.restart();
    const decision = await eventually(async () => take(limiter, 'org_a'), 5000);
    // The denied request took nothing from the allowance.
    assert.equal(decision.remaining, 2);
  });
});

/** Resolves once the limiter's connection is ready (a fresh one connects in a few ms). */
function connected(limiter: Admission): Promise<void> {
  return eventuallyTrue('the limiter connected', () => limiter.available(), 5000);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Retries `attempt` until it resolves, for at most `withinMs`. */
async function eventually(
  attempt: () => Promise<LimitDecision> | LimitDecision,
  withinMs: number,
): Promise<LimitDecision> {
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
