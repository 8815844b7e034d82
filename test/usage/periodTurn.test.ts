import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { CallerUsage } from '../../src/limits/admission.js';
import { ceilingKey } from '../../src/limits/admissionScript.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';

/**
 * A new period of the key service's count: what dead instances left in the ceiling's count, and what live ones
 * acknowledged for them, stays in the period that ended (src/usage/README.md, "The ceiling's arithmetic").
 */

const silent = pino({ level: 'silent' });
const CEILING = 100;
const ORGANIZATIONS = Array.from({ length: 12 }, (_, i) => `org_period_turn_${i}`);

describe('a new period of the usage ceiling (Redis, two instances)', () => {
  let redis: RedisServer;
  const connections: RedisConnection[] = [];
  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    for (const connection of connections) closeRedis(connection);
    await redis?.stop();
  });

  it("starts from the key service's count alone, with the calls live instances still keep", async () => {
    const admissions = [0, 1].map(() => {
      const connection = connectRedis({ kind: 'server', url: redis.url }, silent);
      connections.push(connection);
      return createRedisAdmission({ requests: 600, windowSeconds: 60, redis: connection, logger: silent });
    });
    const [adopter, other] = admissions as [(typeof admissions)[0], (typeof admissions)[0]];
    await eventually('admissions available', () => admissions.every((admission) => admission.available()));
    const periodEnd = new Date(Date.now() + 3_600_000);
    const nextPeriodEnd = new Date(periodEnd.getTime() + 30 * 86_400_000);
    const now = Date.now();
    for (const [i, organization] of ORGANIZATIONS.entries()) {
      // Instances dead this period: i calls recorded and lost long ago; one since, with 5 recorded, 3 of them
      // in Redis, taken over and acknowledged by the adopter, 2 lost with it.
      await withClient(redis.port, (client) =>
        client.hset(ceilingKey(organization), 'gone', `${i} 6 0 0`, 'dead-instance', '5 4 0 1000'),
      );
      adopter.ledger.adopted(organization, 3);
      adopter.ledger.sending(organization, 3);
      adopter.ledger.acknowledged(organization, 3);
      const usage: CallerUsage = { used: 50, ceiling: CEILING, periodEnd, acknowledgedBefore: 13 };
      (await adopter.take(organization, now, usage)).giveBack(true);
      // The other instance records one call the key service has not acknowledged when the period turns.
      (await other.take(organization, now, usage)).keep();
    }
    for (const organization of ORGANIZATIONS) {
      const usage: CallerUsage = { used: 0, ceiling: CEILING, periodEnd: nextPeriodEnd, acknowledgedBefore: 13 };
      const grants = await Promise.all(Array.from({ length: 110 }, () => adopter.take(organization, now, usage)));
      for (const grant of grants) grant.keep();
      assert.equal(
        grants.filter((grant) => grant.allowed).length,
        CEILING - 1,
        `${organization}: the ceiling less the one call still on its way, nothing of the period that ended`,
      );
    }
    await Promise.all(admissions.map((admission) => admission.close()));
  });
});
