import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Admission } from '../../src/limits/admission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { skipWithoutRedis } from '../support/redisServer.js';
import { type RedisCluster, startRedisCluster, withClient } from '../support/redisTopology.js';
import { serveLimitedGateways } from './limitedGateways.js';

const NOW = new Date('2026-11-21T12:00:15.000Z');
const silent = pino({ level: 'silent' });

describe('request limit on a Redis cluster', function () {
  // 1,440 requests through three instances and three nodes: slow on a loaded machine, never stuck.
  this.timeout(60_000);
  let cluster: RedisCluster;
  const connections: RedisConnection[] = [];
  const limiters: Admission[] = [];

  before(async function () {
    skipWithoutRedis(this);
    cluster = await startRedisCluster();
  });
  after(async () => {
    await Promise.all(limiters.map((limiter) => limiter.close()));
    for (const connection of connections) closeRedis(connection);
    await cluster?.stop();
  });

  it("three instances together admit each organization's allowance, never more, at most 5 % under, its keys spread over the nodes", async () => {
    const allowance = 30;
    for (let i = 0; i < 3; i++) {
      const redis = connectRedis(
        { kind: 'cluster', nodes: [{ host: '127.0.0.1', port: cluster.nodes[i]!.port }] },
        silent,
      );
      connections.push(redis);
      limiters.push(createRedisAdmission({ requests: allowance, windowSeconds: 60, redis, logger: silent }));
    }
    await eventually('every instance connected', () => limiters.every((limiter) => limiter.available()), 10_000);
    // Every node knows the whole slot map once each instance has been answered on each node.
    for (const limiter of limiters) {
      for (let i = 0; i < 12; i++) await servedEventually(limiter, `org_warmup_${i}`);
    }
    const gateways = await serveLimitedGateways(limiters, () => NOW);
    const organizations = Array.from({ length: 24 }, (_, i) => `org_${i}`);
    const admitted = new Map<string, number>();
    /** 503s per organization: each is a call that missed the command timeout. */
    const unavailable = new Map<string, number>();
    const statuses = new Set<number>();
    // 200 concurrent clients, each sending requests one after another: twice each allowance in all.
    // On a loaded machine a Redis call can miss its command timeout: that request answers 503 and,
    // as a client would, is sent again (to the next instance), so every request ends admitted or limited.
    let next = 0;
    const requests = organizations.length * allowance * 2;
    const client = async () => {
      for (let request = next++; request < requests; request = next++) {
        const organizationId = organizations[request % organizations.length]!;
        let status = 503;
        for (let attempt = 0; status === 503 && attempt < 20; attempt++) {
          status = await gateways.get(request + attempt, organizationId);
          statuses.add(status);
          if (status === 503) unavailable.set(organizationId, (unavailable.get(organizationId) ?? 0) + 1);
        }
        if (status === 200) admitted.set(organizationId, (admitted.get(organizationId) ?? 0) + 1);
      }
    };
    try {
      await Promise.all(Array.from({ length: 200 }, client));
    } finally {
      await gateways.close();
    }
    // A call abandoned at the command timeout answers 503 to each request it asked for; what Redis
    // granted it is served by that instance's next call for the organization, if one comes.
    assert.deepEqual(
      [...statuses].filter((status) => ![200, 429, 503].includes(status)),
      [],
    );
    // Never more; fewer only by the units of abandoned calls (at most one per 503 here: an allowance
    // this small is taken without leases), so on a quiet machine exactly the allowance.
    for (const organizationId of organizations) {
      const served = admitted.get(organizationId) ?? 0;
      const refused = unavailable.get(organizationId) ?? 0;
      assert.ok(served <= allowance, `${organizationId}: ${served}`);
      assert.ok(served >= allowance - refused, `${organizationId}: ${served} admitted, ${refused} answered 503`);
    }
    // The counts really live on several nodes: each organization's key on the node owning its slot.
    const keysPerNode = await Promise.all(
      cluster.nodes.map((node) => withClient(node.port, (client) => client.dbsize())),
    );
    assert.equal(
      keysPerNode.reduce((sum, keys) => sum + keys, 0),
      organizations.length + 12,
    );
    assert.ok(keysPerNode.filter((keys) => keys > 0).length >= 2, `keys per node: ${keysPerNode.join(', ')}`);
  });
});

async function servedEventually(limiter: Admission, organizationId: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await limiter.take(organizationId, NOW.getTime());
      return;
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
