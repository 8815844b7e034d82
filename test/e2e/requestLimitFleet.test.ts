import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { USAGE_STREAM_KEY } from '../../src/usage/usageStream.js';
import { eventually } from '../support/eventually.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';
import { type SharedUpstreams, startSharedUpstreams } from '../support/sharedUpstreams.js';
import { tempDir } from '../support/tempDir.js';

/** The default request limit (RATE_LIMIT_REQUESTS=600 per RATE_LIMIT_WINDOW_SECONDS=60), as the README states it. */
const WINDOW_MS = 60_000;
/** An export job's shape: 540 a minute, in bursts of 27 every 3 s, each burst spread over the three instances. */
const BURST = 27;
const BURSTS = 20;
const EVERY_MS = 3000;
/** The bursts after which one instance of the restarted fleet is replaced (stopped right after its last answers). */
const REPLACED_AFTER = [4, 9, 14];
const DAY_MS = 86_400_000;
const SHIFTED_CLOCK = fileURLToPath(new URL('../support/shiftedClock.ts', import.meta.url));

interface Fleet {
  readonly organizationId: string;
  readonly key: string;
  /** The instances requests go to, in turn. */
  rotation: GatewayProcess[];
  readonly statuses: Map<number, number>;
  readonly reasons: Set<string>;
}

/**
 * Two fleets of three gateway instances on one Redis, each serving one organization at the default limit, in one
 * window: one fleet runs throughout, the other is replaced instance by instance (a new one in, the old one sent
 * SIGTERM right after its last answers, so it stops holding units it leased). Under its limit, every request is
 * served. Every instance's clock is moved to the start of one window at once (test/support/shiftedClock.ts).
 */
describe('the default request limit across three instances on one Redis (real processes)', function () {
  this.timeout(240_000);
  let redis: RedisServer;
  let upstreams: SharedUpstreams;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const gateways: GatewayProcess[] = [];

  before(async function () {
    skipWithoutRedis(this);
    dir = await tempDir('limit-fleet-');
    redis = await startRedisServer();
    upstreams = await startSharedUpstreams('limit fleet reader');
    await writeFile(join(dir.path, 'clock-shift'), '0');
  });
  after(async () => {
    await Promise.all(gateways.map((gateway) => gateway.group.destroy()));
    await upstreams?.close();
    await redis?.stop();
    await dir?.remove();
  });

  const start = async (name: string): Promise<GatewayProcess> => {
    const gateway = await startGatewayProcess(
      {
        LOG_LEVEL: 'warn',
        ...upstreams.env,
        REDIS_URL: redis.url,
        SHUTDOWN_DELAY_SECONDS: '0',
        USAGE_SPOOL_DIR: join(dir.path, `spool-${name}`),
        TEST_CLOCK_SHIFT_FILE: join(dir.path, 'clock-shift'),
      },
      [SHIFTED_CLOCK],
    );
    gateways.push(gateway);
    return gateway;
  };

  const fleetOf = (organizationId: string, ceiling: number | null, rotation: GatewayProcess[]): Fleet => {
    const key = testKey(`limit fleet ${organizationId}`);
    const now = Date.now();
    upstreams.keyService.setAnswer(
      key,
      verifyAnswer(key, {
        key: { organizationId, expiresAt: new Date(now + 365 * DAY_MS).toISOString() },
        usage: {
          periodStart: new Date(now - DAY_MS).toISOString(),
          periodEnd: new Date(now + 30 * DAY_MS).toISOString(),
          used: 48_210,
          ceiling,
        },
      }),
    );
    return { organizationId, key, rotation, statuses: new Map(), reasons: new Set() };
  };

  const burst = async (fleet: Fleet, n: number): Promise<void> => {
    const rotation = [...fleet.rotation];
    await Promise.all(
      Array.from({ length: BURST }, async (_, i) => {
        const gateway = rotation[i % rotation.length];
        assert.ok(gateway);
        const res = await fetch(`${gateway.url}/v1/api/keywords?site=acme.com&limit=${1 + ((n + i) % 20)}`, {
          headers: { authorization: `Bearer ${fleet.key}` },
        });
        const body = await res.text();
        fleet.statuses.set(res.status, (fleet.statuses.get(res.status) ?? 0) + 1);
        if (res.status !== 200) fleet.reasons.add(`${res.status} ${/"reason":"(\w+)"/.exec(body)?.[1]}`);
      }),
    );
  };

  it('an organization sending 540 a minute in bursts of 27 every 3 s gets 540 × 200, with no restart and through a rolling restart of all three', async () => {
    const [steady, rolling, replacements] = await Promise.all([
      Promise.all(['n1', 'n2', 'n3'].map(start)),
      Promise.all(['r1', 'r2', 'r3'].map(start)),
      Promise.all(['s1', 's2', 's3'].map(start)),
    ]);
    const fleets = [fleetOf('org_demo', 5_000_000, steady), fleetOf('org_other', null, [...rolling])];

    // Every instance's clock to 200 ms after the start of a window; the window then ends WINDOW_MS - 200 ms from now.
    const startedAt = Date.now();
    const shift = Math.ceil(startedAt / WINDOW_MS) * WINDOW_MS + 200 - startedAt;
    await writeFile(join(dir.path, 'clock-shift'), String(shift));
    for (const gateway of gateways) gateway.group.signalGroup('SIGUSR2');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const windowEndsAt = startedAt + WINDOW_MS - 200;

    const stopped: Promise<unknown>[] = [];
    for (let n = 0; n < BURSTS; n++) {
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + 100 + n * EVERY_MS - Date.now())));
      await Promise.all(fleets.map((fleet) => burst(fleet, n)));
      const replaced = REPLACED_AFTER.indexOf(n);
      const [, rollingFleet] = fleets;
      if (replaced >= 0 && rollingFleet) {
        const [old, next] = [rolling[replaced], replacements[replaced]];
        assert.ok(old && next);
        rollingFleet.rotation = rollingFleet.rotation.map((gateway) => (gateway === old ? next : gateway));
        old.group.signalGroup('SIGTERM');
        stopped.push(old.group.exitWithin(15_000));
      }
    }
    const lastAnswerAt = Date.now();
    const exits = await Promise.all(stopped);

    for (const fleet of fleets) {
      console.log(`      ${fleet.organizationId}: ${JSON.stringify(Object.fromEntries(fleet.statuses))}`);
    }
    assert.ok(lastAnswerAt < windowEndsAt, 'every burst answered within the one window');
    for (const fleet of fleets) {
      assert.deepEqual(
        [...fleet.statuses],
        [[200, BURST * BURSTS]],
        `${fleet.organizationId}: ${[...fleet.reasons].join(', ')}`,
      );
    }
    assert.deepEqual(
      exits,
      [0, 0, 0].map(() => ({ code: 0, signal: null })),
      'each replaced instance stopped cleanly',
    );

    // Usage exact: one event per 200 of each organization.
    const eventsOf = (organizationId: string) =>
      upstreams.keyService.usageEvents.filter((event) => event.organizationId === organizationId).length;
    await eventually(
      'usage delivered',
      () => fleets.every((fleet) => eventsOf(fleet.organizationId) >= BURST * BURSTS),
      15_000,
    );
    for (const fleet of fleets) assert.equal(eventsOf(fleet.organizationId), BURST * BURSTS);

    // Every key the gateway wrote expires, but the usage stream's own few.
    const withoutExpiry = await withClient(redis.port, async (client) => {
      const keys = await client.keys('*');
      const ttls = await Promise.all(keys.map(async (key) => [key, await client.pttl(key)] as const));
      return ttls.filter(([key, ttl]) => ttl < 0 && !key.startsWith(USAGE_STREAM_KEY)).map(([key]) => key);
    });
    assert.deepEqual(withoutExpiry, []);
  });
});
