import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { ApiError, UpstreamError } from '../../src/errors.js';
import type { Admission } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { fakeServices, recordingUsage } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';

/**
 * Never charged for a refusal: an answer of 500 or more, and a 429 other than the request
 * limit's own, gives its unit of the request limit back and is never a usage event.
 */

const NOW = new Date('2026-11-21T12:00:15.000Z');
const silent = pino({ level: 'silent' });

function givesBack(newAdmission: () => Admission) {
  let server: Awaited<ReturnType<typeof listen>>;
  let admission: Admission;
  let failWith: (() => never) | null = null;
  const usage = recordingUsage();

  const get = async () => {
    const res = await fetch(`${server.url}/v1/api/keywords?site=example.com`, {
      headers: { authorization: 'Bearer key-org-a' },
    });
    await res.arrayBuffer();
    return { status: res.status, rateLimit: res.headers.get('ratelimit') };
  };

  beforeEach(async () => {
    usage.events.length = 0;
    failWith = null;
    const platform = stubPlatform(() => (failWith ? failWith() : keywordsData()));
    admission = newAdmission();
    await eventually('admission available', () => admission.available());
    server = await listen(createApp(fakeServices({ admission, usage, platform, now: () => NOW })));
  });
  afterEach(async () => {
    await server.close();
    await admission.close();
  });

  it('20 upstream failures leave RateLimit remaining unchanged and count no usage', async () => {
    assert.deepEqual(await get(), { status: 200, rateLimit: '"per-organization";r=29;t=45' });
    failWith = () => {
      throw new UpstreamError('platform', 'bad_answer', 'status 500');
    };
    assert.deepEqual(
      await get(),
      { status: 502, rateLimit: '"per-organization";r=29;t=45' },
      'the failure says its unit is back',
    );
    const failures = await Promise.all(Array.from({ length: 20 }, get));
    assert.deepEqual(new Set(failures.map((answer) => answer.status)), new Set([502]));
    failWith = null;
    assert.deepEqual(await get(), { status: 200, rateLimit: '"per-organization";r=28;t=45' });
    assert.equal(usage.events.length, 2);
  });

  it("gives back after the platform shares' refusals (429 and 503 raised in the handler)", async () => {
    failWith = () => {
      throw new ApiError('RATE_LIMITED', 'Too many calls in flight for this organization.', {
        reason: 'concurrency_share_exceeded',
        headers: { 'Retry-After': '1' },
      });
    };
    const shares = await Promise.all(Array.from({ length: 10 }, get));
    failWith = () => {
      throw new UpstreamError('platform', 'throttled', 'busy', 1);
    };
    const busy = await Promise.all(Array.from({ length: 10 }, get));
    assert.deepEqual(new Set(shares.map((answer) => answer.status)), new Set([429]));
    assert.deepEqual(new Set(busy.map((answer) => answer.status)), new Set([503]));
    failWith = null;
    assert.deepEqual(await get(), { status: 200, rateLimit: '"per-organization";r=29;t=45' });
    assert.equal(usage.events.length, 1);
  });

  it("charges the caller's own mistakes (4xx other than 429)", async () => {
    const res = await fetch(`${server.url}/v1/api/keywords`, { headers: { authorization: 'Bearer key-org-a' } });
    assert.equal(res.status, 400);
    await res.arrayBuffer();
    assert.deepEqual(await get(), { status: 200, rateLimit: '"per-organization";r=28;t=45' });
  });
}

const RATE_LIMIT = { requests: 30, windowSeconds: 60 };

describe('the request limit gives back what the gateway failed to serve (in process)', () => {
  givesBack(() => createLocalAdmission(RATE_LIMIT));
});

describe('the request limit gives back what the gateway failed to serve (Redis)', () => {
  let redis: RedisServer;
  const connections: RedisConnection[] = [];
  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  afterEach(async () => {
    for (const connection of connections.splice(0)) closeRedis(connection);
    await redis.command('FLUSHALL');
  });
  after(async () => {
    await redis?.stop();
  });
  givesBack(() => {
    const connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    connections.push(connection);
    return createRedisAdmission({ ...RATE_LIMIT, redis: connection, logger: silent });
  });
});
