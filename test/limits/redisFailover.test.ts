import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Admission } from '../../src/limits/admission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { skipWithoutRedis } from '../support/redisServer.js';
import {
  type MasterSwitchWatch,
  type SentinelSet,
  startSentinelSet,
  watchMasterSwitch,
} from '../support/redisTopology.js';
import { serveLimitedGateways } from './limitedGateways.js';

const NOW = new Date('2026-11-21T12:00:15.000Z');
const silent = pino({ level: 'silent' });

describe('request limit on Redis with sentinels: the master killed under load', () => {
  let set: SentinelSet;
  const connections: RedisConnection[] = [];
  const limiters: Admission[] = [];
  let switches: MasterSwitchWatch | undefined;

  before(async function () {
    skipWithoutRedis(this);
    set = await startSentinelSet();
  });
  after(async () => {
    await Promise.all(limiters.map((limiter) => limiter.close()));
    for (const connection of connections) closeRedis(connection);
    switches?.close();
    await set?.stop();
  });

  it('answers 503 only during the failover, 200 again within 2 s of +switch-master, never over the allowance', async function () {
    this.timeout(90_000); // the waits below add up to 80 s
    const allowance = 1200;
    for (let i = 0; i < 3; i++) {
      const redis = connectRedis(
        {
          kind: 'sentinel',
          sentinels: set.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
          name: set.name,
        },
        silent,
      );
      connections.push(redis);
      limiters.push(createRedisAdmission({ requests: allowance, windowSeconds: 60, redis, logger: silent }));
    }
    await eventually('every instance connected', () => limiters.every((limiter) => limiter.available()), 5000);

    switches = await watchMasterSwitch(set);

    const gateways = await serveLimitedGateways(limiters, () => NOW);
    const statuses = new Map<number, number>();
    let killedAt: number | null = null;
    let outageSeen = false;
    let firstOkAfterOutage: number | null = null;
    let stop = false;
    // 30 clients, each sending one request after another, spread over the three instances.
    const client = async (index: number) => {
      while (!stop) {
        const status = await gateways.get(index, 'org_a');
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
        if (status === 503 && killedAt !== null) outageSeen = true;
        if (status === 200 && outageSeen) firstOkAfterOutage ??= Date.now();
        // Keep the load steady rather than spinning on 503s while the master is gone.
        if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 10));
      }
    };
    const clients = Array.from({ length: 30 }, (_, i) => client(i));
    try {
      await eventually('300 admitted', () => (statuses.get(200) ?? 0) >= 300, 20_000);
      await set.master.kill();
      killedAt = Date.now();
      await eventually('+switch-master', () => switches?.switchedAt != null, 20_000);
      await eventually('a 200 after the outage', () => firstOkAfterOutage !== null, 10_000);
      // Then the window is spent on the promoted replica.
      await eventually('100 refused', () => (statuses.get(429) ?? 0) >= 100, 30_000);
    } finally {
      stop = true;
      await Promise.all(clients);
      await gateways.close();
    }
    const switchedAt = switches?.switchedAt ?? null;
    assert.ok(killedAt !== null && switchedAt !== null && firstOkAfterOutage !== null);
    const backWithinMs = firstOkAfterOutage - switchedAt;
    assert.ok(backWithinMs <= 2000, `200s back ${backWithinMs} ms after +switch-master`);
    assert.ok((statuses.get(503) ?? 0) > 0, 'the failover was seen by requests');
    assert.deepEqual([...statuses.keys()].sort(), [200, 429, 503]);
    const admitted = statuses.get(200) ?? 0;
    assert.ok(admitted <= allowance, `${admitted} admitted, allowance ${allowance}`);
  });
});
