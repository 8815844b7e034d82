import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer, connect as netConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Principal } from '../../src/auth/principal.js';
import { ApiError, UpstreamError } from '../../src/errors.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { sleep, withDeadline } from '../../src/upstream/deadline.js';
import { createUsageBuffer, type UsageBuffer, type UsageBufferOptions } from '../../src/usage/createUsageBuffer.js';
import { type RedisQueueOptions, redisUsageQueue } from '../../src/usage/redisUsageQueue.js';
import type { UsageEvent, UsageSink } from '../../src/usage/usageEvent.js';
import type { UsageLedger } from '../../src/usage/usageLedger.js';
import { createUsageSpool } from '../../src/usage/usageSpool.js';
import {
  createUsageStream,
  USAGE_STREAM_GROUP,
  USAGE_STREAM_KEY,
  usageWaitingKey,
} from '../../src/usage/usageStream.js';
import { packEvents } from '../../src/usage/usageStreamEntry.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';
import { tempDir } from '../support/tempDir.js';

const ORG_A: Principal = { organizationId: 'org_a', keyId: 'key_a', keyPrefix: 'atl_aaaaaaaa' };
const silent = pino({ level: 'silent' });
const FIXED_AT = '2026-11-21T12:00:00.000Z';

/** A key service's usage endpoint: counts each id once; fails every call while `down`. */
class CountingSink implements UsageSink {
  readonly counted = new Map<string, UsageEvent>();
  duplicates = 0;
  calls = 0;
  down = false;

  async recordUsage(events: readonly UsageEvent[]) {
    this.calls += 1;
    if (this.down) throw new UpstreamError('key-service', 'bad_answer', 'usage: status 503');
    let accepted = 0;
    for (const event of events) {
      if (this.counted.has(event.id)) this.duplicates += 1;
      else accepted += 1;
      this.counted.set(event.id, event);
    }
    return { accepted, duplicates: events.length - accepted };
  }
}

/** A ledger that only notes what the buffer tells it, per step and organization. */
function notingLedger() {
  const told: Record<'adopted' | 'sending' | 'acknowledged' | 'dropped' | 'repeated', Record<string, number>> = {
    adopted: {},
    sending: {},
    acknowledged: {},
    dropped: {},
    repeated: {},
  };
  const note = (step: keyof typeof told) => (organizationId: string, calls: number) => {
    told[step][organizationId] = (told[step][organizationId] ?? 0) + calls;
  };
  const unused = (): never => {
    throw new Error('not used by the buffer');
  };
  const ledger: UsageLedger = {
    beforeVerify: unused,
    adopted: note('adopted'),
    sending: note('sending'),
    acknowledged: note('acknowledged'),
    dropped: note('dropped'),
    repeated: note('repeated'),
    isNearCeiling: () => false,
  };
  return { ledger, told };
}

const ORG_B: Principal = { organizationId: 'org_b', keyId: 'key_b', keyPrefix: 'atl_bbbbbbbb' };

/** Like eventually, for a condition that asks Redis. */
async function until(what: string, check: () => Promise<boolean>, withinMs = 5000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Log lines a test reads back. */
function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/** A TCP proxy to a local port that holds every chunk `delayMs` each way, in order: a slow Redis. */
async function slowProxy(port: number) {
  const sockets = new Set<Socket>();
  const proxy = {
    delayMs: 0,
    url: '',
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const relay = (from: Socket, to: Socket) =>
    from.on('data', (chunk: Buffer) => {
      if (proxy.delayMs === 0) to.write(chunk);
      else setTimeout(() => to.write(chunk), proxy.delayMs);
    });
  const server = createServer((client) => {
    const upstream = netConnect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    relay(client, upstream);
    relay(upstream, client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `redis://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}

describe('usage buffer on Redis (real redis-server)', () => {
  let redis: RedisServer;
  const connections: RedisConnection[] = [];
  const buffers: UsageBuffer[] = [];

  const connect = async (): Promise<RedisConnection> => {
    const connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    connections.push(connection);
    await eventually('redis connected', () => connection.status === 'ready');
    return connection;
  };
  /** One instance's buffer, on its own connection as a separate process would have. */
  const newBuffer = async (
    sink: UsageSink,
    options: Partial<UsageBufferOptions> & Pick<RedisQueueOptions, 'persistIntervalMs' | 'claimIdleMs'> = {},
  ): Promise<UsageBuffer> => {
    const connection = await connect();
    const { persistIntervalMs = 25, claimIdleMs = 5000, ...rest } = options;
    const logger = options.logger ?? silent;
    const stream = createUsageStream({ redis: connection });
    const buffer = createUsageBuffer({
      sink,
      logger,
      queue: redisUsageQueue({ stream, logger, persistIntervalMs, claimIdleMs }),
      retryBaseMs: 20,
      retryMaxMs: 100,
      ...rest,
    });
    buffers.push(buffer);
    return buffer;
  };
  /** Events in the stream, as the scripts count them. */
  const streamLength = async () =>
    Number(await withClient(redis.port, (client) => client.get(usageWaitingKey(USAGE_STREAM_KEY))));
  /** Entries in the stream: one per round written. */
  const streamEntries = () => withClient(redis.port, (client) => client.xlen(USAGE_STREAM_KEY));
  /** Entries some consumer holds. */
  const pendingEntries = async () =>
    Number((await withClient(redis.port, (client) => client.xpending(USAGE_STREAM_KEY, USAGE_STREAM_GROUP)))[0]);

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await Promise.all(buffers.splice(0).map((buffer) => buffer.close(0).catch(() => undefined)));
    for (const connection of connections.splice(0)) closeRedis(connection);
    if (redis) await redis.restart();
  });

  it('writes recorded calls to the stream within the persist interval as one entry, then delivers each once and removes it', async () => {
    const sink = new CountingSink();
    sink.down = true;
    const usage = await newBuffer(sink, { flushIntervalMs: 100 });
    for (let i = 0; i < 30; i++) usage.record(ORG_A, '/v1/api/keywords');
    // In Redis before any delivery succeeded: a process killed now loses none of them.
    await eventually('a delivery tried', () => sink.calls > 0, 2000);
    assert.equal(await streamLength(), 30);
    assert.equal(await streamEntries(), 1, 'one entry for the round');
    const [entry] = await withClient(redis.port, (client) => client.xrange(USAGE_STREAM_KEY, '-', '+', 'COUNT', 1));
    const fields = entry?.[1] ?? [];
    assert.deepEqual(
      fields.filter((_value, i) => i % 2 === 0),
      ['n', 'e', 'r'],
      'the event count, the packed events and the round key',
    );
    assert.equal(fields[1], '30');

    sink.down = false;
    await eventually('30 events counted', () => sink.counted.size === 30, 5000);
    await until('the stream emptied', async () => (await streamLength()) === 0);
    assert.equal(usage.pendingTotal(), 0);
    assert.equal(sink.duplicates, 0);
    for (const event of sink.counted.values()) {
      assert.equal(event.organizationId, 'org_a');
      assert.equal(event.keyId, 'key_a');
      assert.equal(event.route, '/v1/api/keywords');
    }
  });

  it('takes over entries held by an instance that stopped renewing them, and delivers each once', async () => {
    const deadSink = new CountingSink();
    deadSink.down = true;
    const dying = await newBuffer(deadSink, { flushIntervalMs: 100 });
    for (let i = 0; i < 40; i++) dying.record(ORG_A, '/v1/api/rankings');
    // The dying instance reads them (they are pending on it) and cannot deliver them.
    await eventually('the dying instance tried to deliver', () => deadSink.calls > 0, 3000);
    await until('all 40 in Redis', async () => (await streamLength()) === 40);
    assert.equal(await pendingEntries(), await streamEntries(), 'every entry held by the dying instance');
    // Killed: its connection goes, nothing renews its hold any more.
    for (const connection of connections.splice(0)) closeRedis(connection);
    await dying.close(0);

    const sink = new CountingSink();
    await newBuffer(sink, { claimIdleMs: 300, flushIntervalMs: 100 });
    await eventually('the survivor delivered the 40', () => sink.counted.size === 40, 5000);
    assert.equal(sink.duplicates, 0);
    await until('the stream emptied', async () => (await streamLength()) === 0);
  });

  it('while an instance keeps retrying a batch, no other takes it over', async () => {
    const stuckSink = new CountingSink();
    stuckSink.down = true;
    const holder = await newBuffer(stuckSink, { claimIdleMs: 300, flushIntervalMs: 100 });
    for (let i = 0; i < 10; i++) holder.record(ORG_A, '/v1/api/keywords');
    await eventually('the holder tried', () => stuckSink.calls > 0, 3000);
    const other = new CountingSink();
    await newBuffer(other, { claimIdleMs: 300, flushIntervalMs: 50 });
    // Several claim rounds of the other instance pass while the holder renews its hold.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(other.calls, 0, 'the held batch was not taken over');
    stuckSink.down = false;
    await eventually('the holder delivered its batch', () => stuckSink.counted.size === 10, 5000);
    assert.equal(other.counted.size, 0);
  });

  it('on close with the key service down: events stay in Redis, the close succeeds, another instance delivers each once', async () => {
    const sink = new CountingSink();
    sink.down = true;
    const { logger, lines } = capturingLogger();
    const first = await newBuffer(sink, { logger, flushIntervalMs: 60_000 });
    for (let i = 0; i < 25; i++) first.record(ORG_A, '/v1/api/keywords');
    await first.close(1500);
    assert.equal(
      lines.find((line) => String(line.msg).includes('left in redis'))?.leftInRedis,
      25,
      'the log line gives the number left in Redis',
    );
    assert.equal(await streamLength(), 25);
    // Every entry held by it, and its lease ended: the next instance to look takes them over at once.
    assert.equal(await pendingEntries(), await streamEntries(), 'every entry');
    assert.equal(await withClient(redis.port, (client) => client.hlen(`${USAGE_STREAM_KEY}:leases`)), 0);

    const next = new CountingSink();
    await newBuffer(next);
    await eventually('the next instance delivered them', () => next.counted.size === 25, 5000);
    assert.equal(next.duplicates, 0);
  });

  it('Redis down at shutdown: recorded calls go to the spool file, and an instance with Redis delivers them once', async () => {
    const dir = await tempDir('usage-redis-spool-');
    try {
      // The key service down too: with it up, the calls held in memory would simply be delivered.
      const down = new CountingSink();
      down.down = true;
      const first = await newBuffer(down, { persistIntervalMs: 60_000, spool: createUsageSpool(dir.path) });
      for (let i = 0; i < 12; i++) first.record(ORG_A, '/v1/api/keywords');
      await redis.kill();
      await first.close(1500);
      const files = await readdir(dir.path);
      assert.equal(files.length, 1, 'one spool file');

      await redis.restart();
      for (const connection of connections.splice(0)) closeRedis(connection);
      const sink = new CountingSink();
      const next = await newBuffer(sink, { spool: createUsageSpool(dir.path) });
      assert.equal(await next.deliverSpooled(), 12);
      await eventually('the spooled events delivered', () => sink.counted.size === 12, 5000);
      assert.equal(sink.duplicates, 0);
      await until('the spool file deleted once stored in Redis', async () => (await readdir(dir.path)).length === 0);
    } finally {
      await dir.remove();
    }
  });

  it('Redis slow at shutdown: its steps end at their deadline, and the spool gets the time kept for it', async () => {
    const dir = await tempDir('usage-redis-slow-');
    const proxy = await slowProxy(redis.port);
    try {
      const down = new CountingSink();
      down.down = true;
      const spool = createUsageSpool(dir.path);
      // A slow disk: the write takes most of the second kept for it.
      const slowDisk = {
        ...spool,
        write: async (events: readonly UsageEvent[]) => {
          await sleep(700);
          await spool.write(events);
        },
      };
      const connection = connectRedis({ kind: 'server', url: proxy.url }, silent);
      connections.push(connection);
      await eventually('redis connected', () => connection.status === 'ready');
      const stream = createUsageStream({ redis: connection });
      const usage = createUsageBuffer({
        sink: down,
        logger: silent,
        queue: redisUsageQueue({ stream, logger: silent, persistIntervalMs: 60_000 }),
        spool: slowDisk,
      });
      buffers.push(usage);
      for (let i = 0; i < 9; i++) usage.record(ORG_A, '/v1/api/keywords');
      // Every answer now comes later than a command may wait for it, yet the connection stays busy.
      proxy.delayMs = 450;
      // As the shutdown runs its closer: cut at the deadline it was given.
      const closeMs = 2500;
      await withDeadline(closeMs, () => usage.close(closeMs), 'closer');
      const files = await readdir(dir.path);
      assert.equal(files.length, 1, 'one spool file');
      const lines = (await readFile(join(dir.path, files[0] ?? ''), 'utf8')).trim().split('\n');
      assert.equal(lines.length, 9, 'every event spooled');
    } finally {
      await proxy.close();
      await dir.remove();
    }
  });

  it('Redis stalled longer than the lease under load, then resumed: no event delivered by two instances, every acknowledgement told once', async function () {
    this.timeout(40_000);
    const claimIdleMs = 1500;
    /** Which instances delivered each event. */
    const deliveredBy = new Map<string, Set<number>>();
    const instances = await Promise.all(
      [0, 1, 2].map(async (instance) => {
        const sink: UsageSink = {
          async recordUsage(events) {
            for (const event of events) {
              const by = deliveredBy.get(event.id) ?? new Set<number>();
              by.add(instance);
              deliveredBy.set(event.id, by);
            }
            return { accepted: events.length, duplicates: 0 };
          },
        };
        const { ledger, told } = notingLedger();
        const buffer = await newBuffer(sink, { claimIdleMs, flushIntervalMs: 100, ledger });
        return { buffer, told };
      }),
    );
    let recorded = 0;
    let loading = true;
    // About 150 calls a second on two instances, all along; the third serves none and watches.
    const load = (async () => {
      for (let n = 0; loading; n++) {
        instances[n % 2]?.buffer.record(n % 3 === 0 ? ORG_B : ORG_A, '/v1/api/keywords');
        recorded += 1;
        await sleep(7);
      }
    })();
    await sleep(1000);
    redis.pause();
    // Longer than the lease: on Redis's clock, once it resumes, every lease looks that old.
    await sleep(claimIdleMs + 1500);
    redis.resume();
    await sleep(2 * claimIdleMs);
    loading = false;
    await load;
    await eventually('every recorded call delivered', () => deliveredBy.size === recorded, 15_000);
    // The two that served stop; whatever they left in Redis, the third takes over at once.
    await Promise.all(instances.slice(0, 2).map(({ buffer }) => buffer.close(2000)));
    await sleep(2 * claimIdleMs);

    const twice = [...deliveredBy.values()].filter((by) => by.size > 1).length;
    assert.equal(twice, 0, 'events delivered by two instances');
    // The ceiling's sum: each acknowledgement told once, by one instance.
    const acknowledged = instances.reduce(
      (sum, { told }) => sum + (told.acknowledged.org_a ?? 0) + (told.acknowledged.org_b ?? 0),
      0,
    );
    assert.equal(acknowledged, recorded);
    assert.equal(await streamLength(), 0, 'nothing left in Redis for a later takeover');
  });

  it('Redis stalled longer than the lease, then resumed: a live instance keeps its entries, one that stays silent is taken over', async () => {
    const idleMs = 1500;
    const live = createUsageStream({ redis: await connect() });
    const other = createUsageStream({ redis: await connect() });
    const event = { id: 'stalled-1', keyId: 'key_a', organizationId: 'org_a', route: '/v1/api/keywords', at: FIXED_AT };
    await live.append([[event]]);
    // The other instance watches, as it does every quarter of the lease.
    assert.deepEqual(await other.takeOver(idleMs, 10), []);
    redis.pause();
    await sleep(idleMs + 1000);
    redis.resume();
    // Its first look after the stall may run before the live instance's renewal does.
    assert.deepEqual(await other.takeOver(idleMs, 10), [], 'the live instance keeps its entry');
    // The live one renews as ever; watched without a gap for a whole lease, it is still alive.
    for (let look = 0; look < 6; look++) {
      await live.keepAlive();
      await sleep(idleMs / 4);
      assert.deepEqual(await other.takeOver(idleMs, 10), [], 'the live instance keeps its entry');
    }
    // It goes silent: after a lease of watching, its entry is taken over.
    let taken: Awaited<ReturnType<typeof other.takeOver>> = [];
    for (let look = 0; look < 12 && taken.length === 0; look++) {
      await sleep(idleMs / 4);
      taken = await other.takeOver(idleMs, 10);
    }
    assert.deepEqual(
      taken.flatMap((round) => round.events.map((taken) => taken.id)),
      ['stalled-1'],
    );
  });

  it('neither Redis nor the spool folder: the close rejects and one line gives the exact number lost', async () => {
    const dir = await tempDir('usage-redis-nospool-');
    try {
      const notAFolder = join(dir.path, 'file');
      await writeFile(notAFolder, 'x');
      const { logger, lines } = capturingLogger();
      const down = new CountingSink();
      down.down = true;
      const usage = await newBuffer(down, {
        logger,
        persistIntervalMs: 60_000,
        spool: createUsageSpool(notAFolder),
      });
      for (let i = 0; i < 7; i++) usage.record(ORG_A, '/v1/api/keywords');
      await redis.kill();
      await assert.rejects(usage.close(1200), /usage events lost/);
      const lost = lines.filter((line) => typeof line.lost === 'number');
      assert.equal(lost.length, 1);
      assert.equal(lost[0]?.lost, 7);
    } finally {
      await dir.remove();
    }
  });

  it('refuses with 503 once the stream holds maxPending events', async () => {
    const sink = new CountingSink();
    sink.down = true;
    const usage = await newBuffer(sink, { maxPending: 5, retryBaseMs: 10_000, retryMaxMs: 10_000 });
    for (let i = 0; i < 4; i++) usage.record(ORG_A, '/v1/api/keywords');
    usage.ensureRoom();
    usage.record(ORG_A, '/v1/api/keywords');
    await until('the five in Redis', async () => (await streamLength()) === 5);
    await until('the backlog seen', async () => usage.pendingTotal() <= 5);
    assert.throws(
      () => usage.ensureRoom(),
      (err: unknown) => err instanceof ApiError && err.reason === 'usage_backlog',
    );
  });

  it('a backlog of many rounds goes out in calls of whole entries up to the batch size; the ledger hears every event once', async () => {
    const sink = new CountingSink();
    sink.down = true;
    const sizes: number[] = [];
    const sizing: UsageSink = {
      recordUsage: (events) => {
        if (!sink.down) sizes.push(events.length);
        return sink.recordUsage(events);
      },
    };
    const { ledger, told } = notingLedger();
    const usage = await newBuffer(sizing, { batchSize: 10, ledger, retryBaseMs: 50, retryMaxMs: 50 });
    // Four rounds of 7 (4 of org_a, 3 of org_b), each written before the next is recorded: four entries.
    for (let round = 1; round <= 4; round++) {
      for (let i = 0; i < 7; i++) usage.record(i < 4 ? ORG_A : ORG_B, '/v1/api/keywords');
      await until(`round ${round} in Redis`, async () => (await streamLength()) === 7 * round);
    }
    assert.equal(await streamEntries(), 4);
    sink.down = false;
    await eventually('28 events counted', () => sink.counted.size === 28, 5000);
    await until('the stream emptied', async () => (await streamLength()) === 0 && (await streamEntries()) === 0);
    assert.deepEqual(sizes, [7, 7, 7, 7], 'two entries would be 14, over the batch size: one entry per call');
    assert.equal(sink.duplicates, 0);
    assert.deepEqual(told.sending, { org_a: 16, org_b: 12 });
    assert.deepEqual(told.acknowledged, { org_a: 16, org_b: 12 });
    assert.deepEqual(told.dropped, {});
  });

  it('an entry no instance read, larger than this instance takes in one call, goes out in pieces', async () => {
    const events = Array.from({ length: 25 }, (_unused, i) => ({
      id: `e${i}`,
      keyId: 'key_a',
      organizationId: 'org_a',
      route: '/v1/api/keywords',
      at: FIXED_AT,
    }));
    // Written by an instance that did not read it into its hold (an older version).
    await withClient(redis.port, async (client) => {
      await client.xgroup('CREATE', USAGE_STREAM_KEY, USAGE_STREAM_GROUP, '0', 'MKSTREAM');
      await client.xadd(USAGE_STREAM_KEY, '*', 'n', '25', 'e', packEvents(events));
      await client.set(usageWaitingKey(USAGE_STREAM_KEY), 25);
    });
    const sizes: number[] = [];
    const sink = new CountingSink();
    await newBuffer(
      {
        recordUsage: (batch) => {
          sizes.push(batch.length);
          return sink.recordUsage(batch);
        },
      },
      { batchSize: 10 },
    );
    await eventually('25 events counted', () => sink.counted.size === 25, 5000);
    await until('the stream emptied', async () => (await streamLength()) === 0);
    assert.deepEqual(sizes, [10, 10, 5]);
    assert.deepEqual(sink.counted.get('e3')?.at, FIXED_AT);
  });

  it('counts the events of a round appended twice, or an entry removed twice, once', async () => {
    const stream = createUsageStream({ redis: await connect() });
    const event = (id: string) => ({
      id,
      keyId: 'key_a',
      organizationId: 'org_a',
      route: '/v1/api/keywords',
      at: FIXED_AT,
    });
    const rounds = [
      [event('a1'), event('a2'), event('a3')],
      [event('b1'), event('b2')],
    ];
    const { entryIds } = await stream.append(rounds);
    assert.equal(entryIds.length, 2);
    // Appended again (as when the answer was lost): the same entries, nothing added.
    assert.deepEqual((await stream.append(rounds)).entryIds, entryIds);
    assert.equal(await streamLength(), 5);
    assert.equal(await stream.keepAlive(), 2, 'both entries pending for the writer');
    await stream.remove([entryIds[0] ?? '']);
    await stream.remove([entryIds[0] ?? '']);
    assert.equal(await streamLength(), 2, 'a second removal takes nothing more');
    assert.equal(await stream.keepAlive(), 1);
  });

  it('drops from the group the consumers of instances gone that hold nothing, never a live one', async () => {
    await withClient(redis.port, async (client) => {
      await client.xgroup('CREATE', USAGE_STREAM_KEY, USAGE_STREAM_GROUP, '0', 'MKSTREAM');
      // An instance that read an entry, delivered it and stopped.
      const id = (await client.xadd(USAGE_STREAM_KEY, '*', 'x', '1')) ?? '';
      await client.xreadgroup('GROUP', USAGE_STREAM_GROUP, 'stopped', 'COUNT', 1, 'STREAMS', USAGE_STREAM_KEY, '>');
      await client.xack(USAGE_STREAM_KEY, USAGE_STREAM_GROUP, id);
      await client.xdel(USAGE_STREAM_KEY, id);
    });
    const live = createUsageStream({ redis: await connect() });
    const event = { id: 'e1', keyId: 'key_a', organizationId: 'org_a', route: '/v1/api/keywords', at: FIXED_AT };
    await live.append([[event]]);
    const stream = createUsageStream({ redis: await connect() });
    assert.deepEqual(await stream.takeOver(5000, 10), [], 'the live holder keeps its entry');
    const consumers = await withClient(redis.port, (client) =>
      client.xinfo('CONSUMERS', USAGE_STREAM_KEY, USAGE_STREAM_GROUP),
    );
    const names = (consumers as unknown[][]).map((consumer) => consumer[1]);
    assert.ok(!names.includes('stopped'), 'the stopped one is dropped');
    assert.ok(names.includes(live.consumer), 'the live one is kept');
  });

  it('Redis restarted empty: the instance writes again what it holds, and delivers each event once', async () => {
    const sink = new CountingSink();
    sink.down = true;
    const { logger, lines } = capturingLogger();
    const usage = await newBuffer(sink, { logger, claimIdleMs: 600 });
    for (let i = 0; i < 20; i++) usage.record(i < 12 ? ORG_A : ORG_B, '/v1/api/keywords');
    await until('the 20 in Redis', async () => (await streamLength()) === 20);
    await redis.restart();
    await until('the 20 in Redis again', async () => (await streamLength()) === 20 && (await pendingEntries()) > 0);
    assert.ok(lines.some((line) => String(line.msg).includes('writing them again')));
    sink.down = false;
    await eventually('20 events counted', () => sink.counted.size === 20, 5000);
    await until('the stream emptied', async () => (await streamLength()) === 0);
    assert.equal(usage.pendingTotal(), 0);
  });
});
