import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { seedPlatformData } from '../../src/local/seedData.js';
import { USAGE_STREAM_GROUP, USAGE_STREAM_KEY, usageWaitingKey } from '../../src/usage/usageStream.js';
import { type HeldPlatform, startHeldPlatform } from '../e2e/heldPlatform.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { spawnGateway } from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import type { ProcessGroup } from '../support/processGroup.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';
import { tempDir } from '../support/tempDir.js';

const DAY_MS = 86_400_000;
const PATH = '/v1/api/keywords?site=acme.com&limit=3';
/** The promises: a SIGKILL at 200 req/s loses at most this many counted calls... */
const MAX_LOST_TO_SIGKILL = 25;
/** ...and another instance delivers the rest within this long. */
const DELIVERED_WITHIN_MS = 15_000;

interface Instance {
  readonly group: ProcessGroup;
  readonly url: string;
  /** When the process was started. */
  readonly startedAt: number;
}

/**
 * Real gateway processes (`src/main.ts`, as `npm start` runs it) on one real redis-server,
 * with a key service that counts usage events by id and can refuse them: what a SIGKILL
 * loses, what a SIGTERM leaves in Redis, and which instance delivers what another admitted.
 */
describe('usage through Redis across gateway processes: kills, shutdowns, takeovers', function () {
  this.timeout(90_000);
  const reader = testKey('usage redis reader');
  let redis: RedisServer;
  let keyService: FakeKeyService;
  let platform: HeldPlatform;
  let spool: Awaited<ReturnType<typeof tempDir>>;
  const instances: Instance[] = [];

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
    keyService = await startFakeKeyService();
    const expiresAt = new Date(Date.now() + 365 * DAY_MS).toISOString();
    keyService.setAnswer(
      reader,
      verifyAnswer(reader, { key: { organizationId: 'org_demo', expiresAt }, usage: { ceiling: null } }),
    );
    platform = await startHeldPlatform(seedPlatformData(new Date()));
  });
  after(async () => {
    await platform?.close();
    await keyService?.close();
    await redis?.stop();
  });
  beforeEach(async () => {
    spool = await tempDir('usage-redis-process-');
    keyService.refuseUsage(null);
    keyService.usageEvents.splice(0);
  });
  afterEach(async () => {
    await Promise.all(instances.splice(0).map((instance) => instance.group.destroy()));
    await spool.remove();
    await redis.command('FLUSHALL');
  });

  const start = async (): Promise<Instance> => {
    const startedAt = Date.now();
    const group = spawnGateway({
      SHUTDOWN_DELAY_SECONDS: '0',
      PORT: '0',
      LOG_LEVEL: 'warn',
      PLATFORM_GRAPHQL_URL: platform.url,
      PLATFORM_TOKEN: platform.token,
      KEY_SERVICE_URL: keyService.url,
      KEY_SERVICE_TOKEN: keyService.token,
      REDIS_URL: redis.url,
      RATE_LIMIT_REQUESTS: '1000000',
      USAGE_SPOOL_DIR: spool.path,
    });
    const url = (await group.waitForOutput(/Gateway listening on (http:\/\/\S+)\n/, 45_000, 'stderr'))[1] ?? '';
    const instance = { group, url, startedAt };
    instances.push(instance);
    return instance;
  };
  const get = async (url: string): Promise<number> => {
    const res = await fetch(`${url}${PATH}`, { headers: { authorization: `Bearer ${reader}` } });
    await res.arrayBuffer();
    return res.status;
  };
  const servedSequentially = async (url: string, calls: number): Promise<number> => {
    let ok = 0;
    for (let i = 0; i < calls; i++) if ((await get(url)) === 200) ok += 1;
    return ok;
  };
  const counted = () => keyService.usageEvents.length;
  /** Events in the stream, as the scripts count them. */
  const streamLength = async () =>
    Number(await withClient(redis.port, (client) => client.get(usageWaitingKey(USAGE_STREAM_KEY))));
  /** Like eventually, for a condition that asks Redis; within the delivery promise unless told. */
  const until = async (what: string, check: () => Promise<boolean>, withinMs = DELIVERED_WITHIN_MS) => {
    const deadline = Date.now() + withinMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  /** Entries some instance holds. */
  const pendingInRedis = async (): Promise<number> =>
    Number((await withClient(redis.port, (client) => client.xpending(USAGE_STREAM_KEY, USAGE_STREAM_GROUP)))[0]);
  const logLines = (instance: Instance) =>
    instance.group
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; leftInRedis?: number; code?: number });

  it('SIGKILL at about 200 req/s loses at most 25 counted calls; the next instance delivers the rest within 15 s, each once', async () => {
    // The key service takes nothing while the first instance lives: every call it admitted must come from Redis.
    keyService.refuseUsage(503);
    const first = await start();
    const answered = { ok: 0, failed: 0 };
    const calls: Array<Promise<void>> = [];
    const tick = setInterval(() => {
      for (let i = 0; i < 10; i++) {
        calls.push(
          get(first.url).then(
            (status) => {
              if (status === 200) answered.ok += 1;
              else answered.failed += 1;
            },
            () => {
              answered.failed += 1;
            },
          ),
        );
      }
    }, 50);
    try {
      await eventually('600 calls answered', () => answered.ok >= 600, 20_000);
      first.group.signalGroup('SIGKILL');
      await first.group.exited;
    } finally {
      clearInterval(tick);
    }
    await Promise.all(calls);

    keyService.refuseUsage(null);
    const next = await start();
    await until('the next instance emptied the stream', async () => counted() > 0 && (await streamLength()) === 0);
    const deliveredAfterMs = Date.now() - next.startedAt;
    const lost = Math.max(0, answered.ok - counted());
    const ids = keyService.usageEvents.map((event) => event.id);
    assert.equal(new Set(ids).size, ids.length, 'each id counted once');
    console.log(
      `      SIGKILL at ~200 req/s: ${answered.ok} answered 200, ${counted()} delivered by the next instance ` +
        `within ${deliveredAfterMs} ms of its start (lost: ${lost}, ` +
        `resent duplicates: ${keyService.usageDuplicates()})`,
    );
    assert.ok(lost <= MAX_LOST_TO_SIGKILL, `${lost} counted calls lost`);
    assert.ok(deliveredAfterMs <= DELIVERED_WITHIN_MS);
  });

  it('SIGTERM while POST /v1/usage fails: the events stay in Redis (exit 0 within 10 s, no spool), another instance delivers each once', async () => {
    keyService.refuseUsage(503);
    const first = await start();
    const served = await servedSequentially(first.url, 50);
    assert.equal(served, 50);
    const signalled = Date.now();
    first.group.signalGroup('SIGTERM');
    const exit = await first.group.exitWithin(10_000);
    assert.deepEqual(exit, { code: 0, signal: null }, first.group.stderr());
    assert.ok(Date.now() - signalled < 10_000, 'exited within 10 s of the signal');
    assert.deepEqual(
      logLines(first)
        .filter((line) => line.leftInRedis !== undefined)
        .map((line) => line.leftInRedis),
      [50],
      'one line says how many were left in Redis',
    );
    assert.equal(counted(), 0);
    assert.equal(await streamLength(), 50, 'all 50 in Redis');
    assert.deepEqual(await readdir(spool.path).catch(() => []), [], 'nothing spooled: Redis holds them');

    keyService.refuseUsage(null);
    const next = await start();
    await until('the next instance delivered the 50', async () => counted() === 50 && (await streamLength()) === 0);
    assert.ok(Date.now() - next.startedAt <= DELIVERED_WITHIN_MS);
    assert.equal(keyService.usageDuplicates(), 0, 'each event sent once');
    assert.equal(new Set(keyService.usageEvents.map((event) => event.id)).size, 50);
  });

  it('Redis restarted empty while the instance holds its calls: written to Redis again, and SIGTERM delivers exactly 5', async () => {
    keyService.refuseUsage(503);
    const instance = await start();
    assert.equal(await servedSequentially(instance.url, 5), 5);
    await until('the 5 in Redis', async () => (await streamLength()) === 5, 5000);
    await redis.restart();
    // Redis lost its copy; the instance still holds the calls and writes them again.
    await until('the 5 in Redis again', async () => (await streamLength()) === 5 && (await pendingInRedis()) > 0);
    keyService.refuseUsage(null);
    instance.group.signalGroup('SIGTERM');
    assert.deepEqual(await instance.group.exitWithin(10_000), { code: 0, signal: null }, instance.group.stderr());
    assert.equal(counted(), 5);
    assert.equal(new Set(keyService.usageEvents.map((event) => event.id)).size, 5);
  });

  it('two running instances: the events one held when it was killed are delivered by the other, each once', async () => {
    keyService.refuseUsage(503);
    const dying = await start();
    assert.equal(await servedSequentially(dying.url, 40), 40);
    // All 40 in Redis, and the dying instance holds a batch of them (pending on it) that it keeps retrying.
    await until(
      '40 in Redis, some held',
      async () => (await streamLength()) === 40 && (await pendingInRedis()) > 0,
      5000,
    );
    const survivor = await start();
    assert.equal(await servedSequentially(survivor.url, 10), 10);

    dying.group.signalGroup('SIGKILL');
    await dying.group.exited;
    const killedAt = Date.now();
    keyService.refuseUsage(null);
    await until('the survivor delivered all 50', async () => counted() === 50 && (await streamLength()) === 0);
    console.log(`      the survivor delivered the killed instance's 40 within ${Date.now() - killedAt} ms of the kill`);
    assert.equal(new Set(keyService.usageEvents.map((event) => event.id)).size, 50);
    assert.equal(keyService.usageDuplicates(), 0);
  });
});
