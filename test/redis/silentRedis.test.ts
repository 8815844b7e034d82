import assert from 'node:assert/strict';
import { pino } from 'pino';
import { type Admission, LimiterUnavailable } from '../../src/limits/admission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import {
  closeRedis,
  connectRedis,
  REDIS_COMMAND_TIMEOUT_MS,
  type RedisConnection,
} from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';

const silent = pino({ level: 'silent' });
/**
 * The bound asserted: the command timeout plus room for timers on a busy machine, well short of
 * the twice the timeout a call waited when it queued behind a pipeline out to a silent Redis.
 */
const BOUND_MS = REDIS_COMMAND_TIMEOUT_MS + 100;

/** How long after it was made a call settled, and whether it was refused. */
async function timed(call: () => unknown): Promise<{ ms: number; refused: boolean }> {
  const started = performance.now();
  try {
    await call();
    return { ms: performance.now() - started, refused: false };
  } catch {
    return { ms: performance.now() - started, refused: true };
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a Redis that stops answering (SIGSTOP): each call refused within the command timeout', () => {
  let redis: RedisServer;
  let connection: RedisConnection;
  let limiter: Admission;

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  beforeEach(async () => {
    connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    limiter = createRedisAdmission({ requests: 1000, windowSeconds: 60, redis: connection, logger: silent });
    await eventually('connected', () => limiter.available());
  });
  afterEach(async () => {
    redis.resume();
    await limiter.close();
    closeRedis(connection);
  });
  after(async () => {
    await redis?.stop();
  });

  it('a call made while an earlier one is out is refused within the timeout of its own start, not after both', async () => {
    redis.pause();
    // A first call goes out to the silent Redis (auto-pipelined: it holds the connection's pipeline).
    const first = timed(() => limiter.take('org_first', Date.now()));
    await sleep(20);
    // Made while the first is out: ioredis writes them only once the first has timed out.
    const [limited, claimed] = await Promise.all([
      timed(() => limiter.take('org_second', Date.now())),
      timed(() =>
        limiter.take('org_third', Date.now(), {
          used: 0,
          ceiling: 1000,
          periodEnd: new Date(Date.now() + 86_400_000),
          acknowledgedBefore: 0,
        }),
      ),
    ]);
    const earlier = await first;
    assert.ok(earlier.refused && limited.refused && claimed.refused, 'every call refused');
    assert.ok(earlier.ms < BOUND_MS, `first call refused after ${Math.round(earlier.ms)} ms`);
    assert.ok(limited.ms < BOUND_MS, `request limit refused after ${Math.round(limited.ms)} ms`);
    assert.ok(claimed.ms < BOUND_MS, `ceiling claim refused after ${Math.round(claimed.ms)} ms`);
  });

  it('the refusal is the limiter being unavailable, and the limit answers again once Redis does', async () => {
    redis.pause();
    const first = assert.rejects(async () => limiter.take('org_first', Date.now()), LimiterUnavailable);
    await sleep(20);
    await assert.rejects(async () => limiter.take('org_second', Date.now()), LimiterUnavailable);
    await first;
    redis.resume();
    let decision: Awaited<ReturnType<Admission['take']>> | null = null;
    const deadline = Date.now() + 5000;
    while (decision === null && Date.now() < deadline) {
      try {
        decision = await limiter.take('org_second', Date.now());
      } catch {
        await sleep(20);
      }
    }
    assert.ok(decision?.allowed, 'admitted once Redis answers again');
  });
});
