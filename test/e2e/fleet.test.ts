import assert from 'node:assert/strict';
import { join } from 'node:path';
import { eventually } from '../support/eventually.js';
import { type GatewayProcess, startGatewayProcess } from '../support/gatewayProcess.js';
import { type BalancedServer, type Balancer, skipWithoutHaproxy, startBalancer } from '../support/haproxy.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { tempDir } from '../support/tempDir.js';
import {
  startTenantUpstreams,
  type Tenant,
  type TenantGroup,
  type TenantUpstreams,
  tenantGet,
  tenantsOf,
} from '../support/tenants.js';

/** Above what the balancer needs to mark an instance down (2 checks 1 s apart), with room for a busy machine. */
const SHUTDOWN_DELAY_SECONDS = 3;
const CLIENTS = 8;
/** Organizations, each with its own key, calling from its own address: new to every instance that starts. */
const TENANTS: TenantGroup = { name: 'fleet', count: 2000 };
/** As a key service across a network answers. */
const VERIFY_DELAY_MS = 30;
/** The rolling restart's requests a second, each from the next organization (what the test's upstreams, one process,
 * answer on a busy 2-core machine). */
const PER_SECOND = 100;

interface Tally {
  readonly statuses: Map<number, number>;
  /** Answers not in the gateway's JSON envelope (the balancer's own pages), and failed connections. */
  readonly notGateway: string[];
  /** 503s from the gateway without Retry-After. */
  readonly withoutRetryAfter: number;
  /** Status and reason of every answer other than 200. */
  readonly reasons: Set<string>;
}

/**
 * Three gateway instances on one Redis behind a real haproxy that checks each admin
 * port's /readyz every second (out after 2 failures, no retries, no redispatch), with
 * one platform and one key service shared by all (in a process of their own, verify taking
 * 30 ms): a rolling restart under steady load from 2,000 organizations, and a stall of both
 * upstreams, as operators see them.
 */
describe('a fleet of three instances behind haproxy (real processes)', function () {
  this.timeout(180_000);
  let redis: RedisServer;
  let upstreams: TenantUpstreams;
  /** The reader of org_demo, from loopback. */
  let reader: Tenant;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let balancer: Balancer | undefined;
  /** Six slots: the three first instances, and the three that replace them. */
  let slots: BalancedServer[] = [];
  const running = new Map<string, GatewayProcess>();

  before(async function () {
    skipWithoutRedis(this);
    skipWithoutHaproxy(this);
    dir = await tempDir('fleet-');
    redis = await startRedisServer();
    upstreams = await startTenantUpstreams([TENANTS], VERIFY_DELAY_MS);
    reader = { organizationId: 'org_demo', key: upstreams.key, address: '127.0.0.1' };
    const first = await Promise.all(['a1', 'a2', 'a3'].map((name) => start(name)));
    slots = [...first, { name: 'b1' }, { name: 'b2' }, { name: 'b3' }];
    balancer = await startBalancer(dir.path, slots);
    // haproxy counts a server up until its checks fail: wait for the empty slots to be out.
    await until('the three instances in, the empty slots out', async () => {
      const states = await balancer?.states();
      return slots.every((slot) => states?.[slot.name] === (running.has(slot.name) ? 'UP' : 'DOWN'));
    });
  });
  after(async () => {
    await Promise.all([...running.values()].map((gateway) => gateway.group.destroy()));
    await balancer?.stop();
    await upstreams?.close();
    await redis?.stop();
    await dir?.remove();
  });

  const start = async (name: string): Promise<BalancedServer> => {
    const gateway = await startGatewayProcess({
      LOG_LEVEL: 'warn',
      ...upstreams.env,
      REDIS_URL: redis.url,
      RATE_LIMIT_REQUESTS: '1000000',
      TRUSTED_PROXY_HOPS: '1',
      UPSTREAM_TIMEOUT_MS: '1000',
      SHUTDOWN_DELAY_SECONDS: String(SHUTDOWN_DELAY_SECONDS),
      USAGE_SPOOL_DIR: join(dir.path, `spool-${name}`),
    });
    running.set(name, gateway);
    return { name, port: gateway.port, adminPort: gateway.adminPort };
  };
  const stop = async (name: string): Promise<void> => {
    const gateway = running.get(name);
    assert.ok(gateway);
    gateway.group.signalGroup('SIGTERM');
    const exit = await gateway.group.exitWithin((SHUTDOWN_DELAY_SECONDS + 10) * 1000);
    assert.deepEqual(exit, { code: 0, signal: null }, gateway.group.stderr());
    running.delete(name);
  };
  const stateOf = async (name: string) => (await balancer?.states())?.[name];

  /**
   * Through the balancer until `stop()`, each request `caller`'s: `clients` loops, each request after the last one's
   * answer; or, with `perSecond`, requests started at that rate whatever the answers, as independent callers arrive.
   */
  const load = (
    paths: (client: number, i: number) => string,
    clients = CLIENTS,
    caller: (client: number, i: number) => Tenant = () => reader,
    perSecond?: number,
  ) => {
    const tally: Tally & { withoutRetryAfter: number } = {
      statuses: new Map(),
      notGateway: [],
      withoutRetryAfter: 0,
      reasons: new Set<string>(),
    };
    let stopped = false;
    const ask = async (client: number, i: number) => {
      const answer = await tenantGet(balancer?.url ?? '', paths(client, i), caller(client, i));
      if (answer.status === 0) tally.notGateway.push(`connection: ${answer.reason}`);
      else {
        tally.statuses.set(answer.status, (tally.statuses.get(answer.status) ?? 0) + 1);
        if (!answer.fromGateway) tally.notGateway.push(`${answer.status} from the balancer`);
        if (answer.status === 503 && answer.retryAfter === undefined) tally.withoutRetryAfter += 1;
        if (answer.status !== 200) tally.reasons.add(`${answer.status} ${answer.reason}`);
      }
    };
    const loop = async (client: number) => {
      for (let i = 0; !stopped; i++) {
        await ask(client, i);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const started: Array<Promise<void>> = [];
    const pace = async (rate: number) => {
      const since = performance.now();
      for (let i = 0; !stopped; i++) {
        const wait = since + (i * 1000) / rate - performance.now();
        if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
        started.push(ask(i % clients, i));
      }
    };
    const loops =
      perSecond === undefined ? Array.from({ length: clients }, (_, client) => loop(client)) : [pace(perSecond)];
    return {
      tally,
      async stop() {
        stopped = true;
        await Promise.all(loops);
        await Promise.all(started);
      },
    };
  };

  it('a rolling restart (SIGTERM one at a time, a replacement started first) under steady load from 2,000 organizations: 0 client errors, one usage event per 200', async () => {
    const before = await upstreams.counts();
    const tenants = tenantsOf(TENANTS);
    let calls = 0;
    const traffic = load(
      (client, i) => `/v1/api/keywords?site=acme.com&limit=${1 + ((client + i) % 20)}`,
      CLIENTS,
      () => tenants[calls++ % tenants.length] as Tenant,
      PER_SECOND,
    );
    try {
      await eventually('traffic flows', () => (traffic.tally.statuses.get(200) ?? 0) >= 50, 20_000);
      for (const [old, next] of [
        ['a1', 'b1'],
        ['a2', 'b2'],
        ['a3', 'b3'],
      ] as const) {
        const replacement = await start(next);
        await balancer?.place(next, { port: replacement.port ?? 0, adminPort: replacement.adminPort ?? 0 });
        await until(`${next} in the balancer`, async () => (await stateOf(next)) === 'UP');
        await stop(old);
        assert.notEqual(await stateOf(old), 'UP', `${old} out of the balancer once it has exited`);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    } finally {
      await traffic.stop();
    }
    const { statuses, notGateway } = traffic.tally;
    const ok = statuses.get(200) ?? 0;
    const reasons = [...traffic.tally.reasons].join(', ');
    console.log(
      `      rolling restart, ${Math.min(calls, tenants.length)} organizations: ${JSON.stringify(Object.fromEntries(statuses))} ${reasons}, others: ${notGateway.length}`,
    );
    assert.deepEqual(notGateway, [], 'no answer from the balancer, no failed connection');
    assert.deepEqual([...statuses.keys()], [200], `every answer a 200: ${reasons}`);
    // The instances still running deliver what the stopped ones left in Redis; each event is counted once by id.
    const delivered = await upstreams.countsOnce((counts) => counts.usageEvents - before.usageEvents >= ok, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = await upstreams.counts();
    assert.equal(after.usageEvents, delivered.usageEvents, 'nothing more arrives');
    assert.equal(after.usageEvents - before.usageEvents, ok, 'one usage event per 200');
  });

  it('an upstream stall (platform hangs, key service answers 503) is answered by the gateways, not the balancer', async () => {
    const cached = ['/v1/api/keywords?site=acme.com&limit=7', '/v1/api/audit-issues?site=acme.com'];
    // Each instance caches its own answers: warm every one of them directly.
    for (const gateway of running.values()) {
      for (const path of cached) {
        assert.equal((await tenantGet(gateway.url, path, reader)).status, 200);
      }
    }
    await upstreams.holdPlatform(true);
    await upstreams.refuseKeyService(503);
    let days = 0;
    const hits = load((_client, i) => cached[i % 2] ?? '', 3);
    const misses = load(() => `/v1/api/rankings?site=acme.com&days=${1 + (days++ % 90)}`, 2);
    const states: string[] = [];
    try {
      const stallEnds = Date.now() + 4000;
      while (Date.now() < stallEnds) {
        const now = (await balancer?.states()) ?? {};
        states.push(...[...running.keys()].map((name) => `${name}:${now[name]}`));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    } finally {
      await Promise.all([hits.stop(), misses.stop()]);
      await upstreams.holdPlatform(false);
      await upstreams.refuseKeyService(null);
    }
    const summary = (tally: Tally) =>
      `${JSON.stringify(Object.fromEntries(tally.statuses))} ${[...tally.reasons].join(', ')}`;
    console.log(`      stall: cached URLs ${summary(hits.tally)}, others ${summary(misses.tally)}`);
    assert.deepEqual([...hits.tally.notGateway, ...misses.tally.notGateway], [], 'zero answers from the balancer');
    assert.ok(
      states.every((state) => state.endsWith(':UP')),
      `every instance stayed in the balancer: ${states.join(',')}`,
    );
    assert.deepEqual([...hits.tally.statuses.keys()], [200], 'the cached URLs all answered 200');
    assert.ok(
      (misses.tally.statuses.get(200) ?? 0) === 0 && misses.tally.statuses.size > 0,
      'the others answered errors',
    );
    assert.equal(misses.tally.withoutRetryAfter, 0, 'every 503 with Retry-After');
  });
});

/** Like eventually, for a condition that asks a process. */
async function until(what: string, check: () => Promise<boolean>, withinMs = 20_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
