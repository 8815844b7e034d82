import assert from 'node:assert/strict';
import type { KeyAuthenticatorCacheOptions } from '../../src/auth/keyAuthenticator.js';
import type { RedisTarget } from '../../src/config.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import { testKey, type VerifyAnswerJson, verifyAnswer } from '../support/keys.js';
import {
  answerEveryPlatformCall,
  countOf,
  type MeteredGateway,
  startMeteredGateway,
  statusesOf,
} from '../support/meteredGateway.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { startRedisCluster, withClient } from '../support/redisTopology.js';

/**
 * The usage ceiling shared by three instances through one real redis-server, over real
 * HTTP, with a key service whose `used` moves as it accepts usage events. The issue asks
 * for exactly the headroom: none over, at most 10 % under.
 */

const KEY = testKey('shared ceiling');
const CEILING = 1000;
const DAY_MS = 86_400_000;

/** A period that ends in the future of both clocks (the test's fixed one and Redis's, which expires the count). */
const periodEndingIn = (days: number): string => new Date(Date.now() + days * DAY_MS).toISOString();

describe('usage ceiling shared through Redis (three instances)', function () {
  // Three instances and hundreds of requests in one process: slow on a busy machine, never stuck.
  this.timeout(60_000);
  let redis: RedisServer;
  let keyService: FakeKeyService;
  let gateways: MeteredGateway[];

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    await redis?.stop();
  });
  beforeEach(async () => {
    answerEveryPlatformCall();
    keyService = await startFakeKeyService();
    gateways = [];
  });
  afterEach(async () => {
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await keyService.close();
    await redis.command('FLUSHALL').catch(() => undefined);
  });

  /** Sets the key's answer and returns it: the fake service moves its `used` as it counts events. */
  function answerWithHeadroom(headroom: number, periodEnd = periodEndingIn(9)): VerifyAnswerJson {
    const answer = verifyAnswer(KEY, { usage: { used: CEILING - headroom, ceiling: CEILING, periodEnd } });
    keyService.setAnswer(KEY, answer);
    return answer;
  }

  async function startInstances(
    cache: Partial<KeyAuthenticatorCacheOptions> = {},
    target: RedisTarget = { kind: 'server', url: redis.url },
  ): Promise<MeteredGateway[]> {
    const instances = 3;
    // A clock that moves, from the fixed moment the test keys are valid at: cached verifications age.
    const startedAt = Date.now();
    const now = () => new Date(FIXED_NOW.getTime() + Date.now() - startedAt);
    gateways = await Promise.all(
      Array.from({ length: instances }, () => startMeteredGateway(keyService, { redis: target, cache, now })),
    );
    await eventually('every instance following the event stream', () => keyService.openStreams() === instances);
    return gateways;
  }

  /** `total` requests per instance, `clients` of them at once on each. */
  async function spread(total: number, clients: number): Promise<number[]> {
    const statuses = await Promise.all(gateways.map((gateway) => statusesOf(gateway.url, KEY, total, clients)));
    return statuses.flat();
  }

  async function delivered(statuses: readonly number[]): Promise<void> {
    await eventually('usage delivered', () => gateways.every((gateway) => gateway.usage.pendingTotal() === 0));
    // Everything served is counted by the key service, once.
    assert.equal(keyService.usageEvents.length, countOf(statuses, 200));
  }

  function assertHeadroomServed(statuses: readonly number[], headroom: number): void {
    const served = countOf(statuses, 200);
    assert.ok(served <= headroom, `served ${served}: ${served - headroom} over a headroom of ${headroom}`);
    assert.ok(served >= 0.9 * headroom, `served ${served}: more than 10 % under a headroom of ${headroom}`);
    // On a loaded machine an upstream or Redis may miss its deadline: the call fails closed (503, 504),
    // is not counted and gives its place back.
    const others = statuses.filter((status) => status !== 200 && status !== 403 && status !== 503 && status !== 504);
    assert.deepEqual(others, [], 'every other request is refused for the ceiling');
  }

  for (const clients of [50, 200]) {
    it(`serves the headroom to ${clients} concurrent clients spread over the instances`, async () => {
      const headroom = 300;
      answerWithHeadroom(headroom);
      await startInstances();
      const perInstance = Math.ceil(clients / 3);
      const statuses = await spread(Math.max(150, perInstance * 3), perInstance);
      await delivered(statuses);
      assertHeadroomServed(statuses, headroom);
    });
  }

  it('serves the headroom to a steady stream while usage is flushed and verified again all along', async () => {
    const headroom = 300;
    answerWithHeadroom(headroom);
    await startInstances();
    const statuses = await spread(150, 2);
    await delivered(statuses);
    assertHeadroomServed(statuses, headroom);
  });

  it("stops at the real ceiling when other interfaces' usage moves `used`", async () => {
    const headroom = 300;
    const answer = answerWithHeadroom(headroom);
    // Usage the gateway's own count does not hold is seen at the next verification: one per freshness period.
    const usageFreshnessMs = 100;
    await startInstances({ usageFreshnessMs });
    const first = await spread(30, 5);
    await delivered(first);
    const elsewhere = 120;
    answer.organization.usage.used += elsewhere;
    await new Promise((resolve) => setTimeout(resolve, 2 * usageFreshnessMs));
    const rest = await spread(150, 5);
    await eventually('usage delivered', () => gateways.every((gateway) => gateway.usage.pendingTotal() === 0));
    const served = countOf(first, 200) + countOf(rest, 200);
    assert.equal(keyService.usageEvents.length, served);
    const real = headroom - elsewhere;
    assert.ok(served <= real, `served ${served}: ${served - real} over the real headroom of ${real}`);
    assert.ok(served >= 0.9 * real, `served ${served}: more than 10 % under the real headroom of ${real}`);
  });

  it('gives leased places back once an instance stops serving, so the count holds only what was served', async () => {
    answerWithHeadroom(900);
    await startInstances();
    // Far from the ceiling: places come in leases, most calls ask Redis nothing.
    const statuses = await spread(40, 4);
    await delivered(statuses);
    // Calls the shared count holds beyond what the key service acknowledged: places held in advance, once delivered.
    const held = async () => {
      const fields = await withClient(redis.port, (client) => client.hgetall('gateway:{org_a}:ceiling'));
      return Object.entries(fields).reduce((sum, [name, field]) => {
        if (name === 'gone period') return sum;
        const [waiting = 0, , inFlight = 0] = field.split(' ').map(Number);
        return sum + waiting + inFlight;
      }, 0);
    };
    assert.ok((await held()) > 0, 'leases held beyond the calls served');
    let left = await held();
    for (let tries = 0; tries < 60 && left !== 0; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = await held();
    }
    assert.equal(left, 0);
  });

  it('never touches Redis for an organization without a ceiling', async () => {
    keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { ceiling: null, periodEnd: periodEndingIn(9) } }));
    await startInstances();
    const statuses = await spread(20, 4);
    await delivered(statuses);
    assert.equal(countOf(statuses, 200), 60);
    const keys = await withClient(redis.port, (client) => client.keys('*'));
    assert.deepEqual(
      keys.filter((key) => !key.includes(':limit:') && !key.includes('{usage}')),
      [],
    );
  });

  it('starts a new count with a new period', async () => {
    const headroom = 40;
    answerWithHeadroom(headroom, periodEndingIn(1));
    await startInstances();
    const before = await spread(30, 10);
    await delivered(before);
    assertHeadroomServed(before, headroom);
    // The key service starts the next period at zero; the organization's cached verifications are dropped.
    const nextHeadroom = 60;
    answerWithHeadroom(nextHeadroom, periodEndingIn(31));
    keyService.sendEvent('organization.updated', { organizationId: 'org_a' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    keyService.usageEvents.length = 0;
    const after = await spread(40, 10);
    await delivered(after);
    assertHeadroomServed(after, nextHeadroom);
  });

  it('answers 503 with Retry-After while Redis is gone, then counts on from the key service once it is back', async () => {
    const headroom = 60;
    answerWithHeadroom(headroom);
    await startInstances();
    const before = await spread(10, 2);
    assert.equal(countOf(before, 200), 30);
    await delivered(before);
    await redis.kill();
    const refusals = await Promise.all(
      gateways.map((gateway) =>
        fetch(`${gateway.url}/v1/api/keywords?site=example.com`, { headers: { authorization: `Bearer ${KEY}` } }),
      ),
    );
    for (const res of refusals) {
      assert.equal(res.status, 503);
      assert.ok(Number(res.headers.get('retry-after')) > 0);
      await res.arrayBuffer();
    }
    // Back empty: the count is seeded again from the key service's `used`, which holds what was served.
    await redis.restart();
    const reconnecting: number[] = [];
    for (const gateway of gateways) {
      // Until its connection is back (at most a retry interval), an instance still answers 503.
      for (let status = 503; status === 503; ) {
        [status = 503] = await statusesOf(gateway.url, KEY, 1, 1);
        if (status !== 503) reconnecting.push(status);
        else await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    const after = [...reconnecting, ...(await spread(30, 5))];
    await delivered([...before, ...after]);
    assertHeadroomServed([...before, ...after], headroom);
  });

  it('serves the headroom on a Redis cluster, the count of each organization in one slot', async () => {
    const cluster = await startRedisCluster();
    try {
      const headroom = 300;
      answerWithHeadroom(headroom);
      const nodes = cluster.nodes.map((node) => ({ host: '127.0.0.1', port: node.port }));
      await startInstances({}, { kind: 'cluster', nodes });
      const statuses = await spread(150, 17);
      await delivered(statuses);
      assertHeadroomServed(statuses, headroom);
    } finally {
      await Promise.all(gateways.splice(0).map((gateway) => gateway.close()));
      await cluster.stop();
    }
  });
});
