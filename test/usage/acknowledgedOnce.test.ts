import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { CallerUsage, Grant } from '../../src/limits/admission.js';
import { ceilingKey } from '../../src/limits/admissionScript.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { createUsageBuffer, type UsageBuffer } from '../../src/usage/createUsageBuffer.js';
import { redisUsageQueue } from '../../src/usage/redisUsageQueue.js';
import type { UsageEvent, UsageSink } from '../../src/usage/usageEvent.js';
import { createUsageSpool } from '../../src/usage/usageSpool.js';
import { createUsageStream } from '../../src/usage/usageStream.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';
import { tempDir } from '../support/tempDir.js';

/**
 * At a shutdown deadline a round may be left both in Redis and in the spool (src/usage/README.md, "What each fault
 * does"): two instances then deliver it. The key service counts it once, and so must the ceiling's count.
 */

const silent = pino({ level: 'silent' });
const CEILING = 100;
const ORGANIZATIONS = Array.from({ length: 10 }, (_, i) => `org_copied_${i}`);
const PER_ORGANIZATION = 3;

/** The key service's usage endpoint: each id counted once. */
class CountingSink implements UsageSink {
  readonly counted = new Set<string>();
  duplicates = 0;
  async recordUsage(events: readonly UsageEvent[]) {
    let accepted = 0;
    for (const event of events) {
      if (this.counted.has(event.id)) this.duplicates += 1;
      else accepted += 1;
      this.counted.add(event.id);
    }
    return { accepted, duplicates: events.length - accepted };
  }
}

describe('a round left both in Redis and in the spool (two instances deliver it)', () => {
  let redis: RedisServer;
  const connections: RedisConnection[] = [];
  const buffers: UsageBuffer[] = [];
  const connect = async (): Promise<RedisConnection> => {
    const connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    connections.push(connection);
    await eventually('redis connected', () => connection.status === 'ready');
    return connection;
  };
  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    await Promise.allSettled(buffers.map((buffer) => buffer.close(0)));
    for (const connection of connections) closeRedis(connection);
    await redis?.stop();
  });

  it('tells the ceiling its acknowledgement once: no call admitted past the ceiling', async () => {
    const dir = await tempDir();
    try {
      const events: UsageEvent[] = ORGANIZATIONS.flatMap((organizationId) =>
        Array.from({ length: PER_ORGANIZATION }, () => ({
          id: randomUUID(),
          keyId: `key_${organizationId}`,
          organizationId,
          route: '/v1/api/keywords',
          at: new Date().toISOString(),
        })),
      );
      // The instance that stopped: its round stored in Redis by a write still out at its deadline, and spooled;
      // its lease ended, its field counting the calls it recorded.
      const stopped = createUsageStream({ redis: await connect() });
      await stopped.append([events]);
      await stopped.letGo();
      await createUsageSpool(dir.path).write(events);
      for (const organization of ORGANIZATIONS) {
        await withClient(redis.port, (client) =>
          client.hset(ceilingKey(organization), 'stopped-instance', `${PER_ORGANIZATION} 0 0 1000`),
        );
      }
      const sink = new CountingSink();
      const instances = await Promise.all(
        [0, 1].map(async () => {
          const connection = await connect();
          const admission = createRedisAdmission({
            requests: 600,
            windowSeconds: 60,
            redis: connection,
            logger: silent,
          });
          const buffer = createUsageBuffer({
            sink,
            logger: silent,
            ledger: admission.ledger,
            spool: createUsageSpool(dir.path),
            queue: redisUsageQueue({ stream: createUsageStream({ redis: connection }), logger: silent }),
          });
          buffers.push(buffer);
          return { admission, buffer };
        }),
      );
      // One instance claims the spool; the other takes the ended lease's entry over.
      assert.equal(await instances[1]?.buffer.deliverSpooled(), events.length);
      await eventually(
        'both copies delivered',
        () => sink.duplicates === events.length && instances.every(({ buffer }) => buffer.pendingTotal() === 0),
        10_000,
      );
      assert.equal(sink.counted.size, events.length, 'the key service counted each call once');
      const [first] = instances;
      if (!first) throw new Error('no instance');
      for (const organization of ORGANIZATIONS) {
        // Both instances' counts written (each acknowledgement is written within a turn).
        await new Promise((resolve) => setTimeout(resolve, 20));
        const acknowledgedBefore = await withClient(redis.port, (client) =>
          client
            .hgetall(ceilingKey(organization))
            .then((fields) =>
              Object.entries(fields).reduce(
                (sum, [name, value]) => (name === 'gone period' ? sum : sum + Number(value.split(' ')[1] ?? 0)),
                0,
              ),
            ),
        );
        assert.equal(acknowledgedBefore, PER_ORGANIZATION, `${organization}: each acknowledgement told once`);
        const usage: CallerUsage = {
          used: PER_ORGANIZATION,
          ceiling: CEILING,
          periodEnd: new Date(Date.now() + 3_600_000),
          acknowledgedBefore,
        };
        const grants: Grant[] = await Promise.all(
          Array.from({ length: 110 }, () => first.admission.take(organization, Date.now(), usage)),
        );
        for (const grant of grants) grant.giveBack(true);
        assert.equal(
          grants.filter((grant) => grant.allowed).length,
          CEILING - PER_ORGANIZATION,
          `${organization}: exactly the room the key service's count leaves`,
        );
      }
      await Promise.all(instances.map(({ admission }) => admission.close()));
    } finally {
      await dir.remove();
    }
  });
});
