import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Principal } from '../../src/auth/principal.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { createUsageBuffer, type UsageBuffer } from '../../src/usage/createUsageBuffer.js';
import { redisUsageQueue } from '../../src/usage/redisUsageQueue.js';
import type { UsageEvent } from '../../src/usage/usageEvent.js';
import { createUsageStream } from '../../src/usage/usageStream.js';
import { eventually } from '../support/eventually.js';
import { skipWithoutRedis } from '../support/redisServer.js';
import { type RedisCluster, startRedisCluster } from '../support/redisTopology.js';

const ORG_A: Principal = { organizationId: 'org_a', keyId: 'key_a', keyPrefix: 'atl_aaaaaaaa' };
const silent = pino({ level: 'silent' });

/**
 * The usage stream on a Redis Cluster: every command finds the node that owns the stream's
 * slot (one hash-tagged key), and a batch one instance held is taken over by another.
 */
describe('usage stream on a Redis Cluster (three real nodes)', function () {
  this.timeout(60_000);
  let cluster: RedisCluster;
  const connections: RedisConnection[] = [];
  const buffers: UsageBuffer[] = [];

  before(async function () {
    skipWithoutRedis(this);
    cluster = await startRedisCluster();
  });
  after(async () => {
    await Promise.all(buffers.map((buffer) => buffer.close(0).catch(() => undefined)));
    for (const connection of connections) closeRedis(connection);
    await cluster?.stop();
  });

  const connect = async (node: number): Promise<RedisConnection> => {
    const port = cluster.nodes[node]?.port ?? 0;
    const connection = connectRedis({ kind: 'cluster', nodes: [{ host: '127.0.0.1', port }] }, silent);
    connections.push(connection);
    await eventually('cluster connected', () => connection.status === 'ready', 10_000);
    return connection;
  };

  it('stores, delivers, lets go and takes over through whichever node owns the stream', async () => {
    const delivered = new Map<string, UsageEvent>();
    let down = true;
    const sink = {
      async recordUsage(events: readonly UsageEvent[]) {
        if (down) throw new Error('usage refused');
        for (const event of events) delivered.set(event.id, event);
        return { accepted: events.length, duplicates: 0 };
      },
    };
    const first = createUsageBuffer({
      sink,
      logger: silent,
      queue: redisUsageQueue({ stream: createUsageStream({ redis: await connect(0) }), logger: silent }),
      flushIntervalMs: 50,
      retryBaseMs: 20,
      retryMaxMs: 50,
    });
    buffers.push(first);
    for (let i = 0; i < 30; i++) first.record(ORG_A, '/v1/api/keywords');
    // Closed while the key service refuses: the 30 stay in the stream, the batch it held let go.
    await first.close(1000);

    down = false;
    const next = createUsageBuffer({
      sink,
      logger: silent,
      queue: redisUsageQueue({ stream: createUsageStream({ redis: await connect(1) }), logger: silent }),
      flushIntervalMs: 50,
    });
    buffers.push(next);
    await eventually('the other instance delivered the 30', () => delivered.size === 30, 10_000);
    assert.ok([...delivered.values()].every((event) => event.organizationId === 'org_a'));
  });
});
