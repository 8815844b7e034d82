import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { CallerUsage, Grant } from '../../src/limits/admission.js';
import { ceilingKey } from '../../src/limits/admissionScript.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';

/** A window that turns while something of the one before is still out: nothing of it lands in the new one. */

const WINDOW_MS = 60_000;
const LAST_MOMENT = Date.parse('2026-11-21T12:00:59.900Z');
const NEXT_WINDOW = LAST_MOMENT + 200;
const silent = pino({ level: 'silent' });

describe('a refund across a window boundary (in process)', () => {
  it('is not added to the next window: the next window admits exactly the limit', async () => {
    const limit = 3;
    const admission = createLocalAdmission({ requests: limit, windowSeconds: WINDOW_MS / 1000 });
    const before = await admission.take('org_turn', LAST_MOMENT);
    assert.equal(before.allowed, true);
    const next: Grant[] = [await admission.take('org_turn', NEXT_WINDOW)];
    // The call of the window before fails after the turn: its unit goes back to its own window, which is over.
    before.giveBack(true);
    for (let i = 0; i < limit; i++) next.push(await admission.take('org_turn', NEXT_WINDOW));
    assert.deepEqual(
      next.map((grant) => grant.allowed),
      [true, true, true, false],
    );
    await admission.close();
  });
});

describe('a window that turns while a call of the organization is out (Redis, with leases)', () => {
  let redis: RedisServer;
  let connection: RedisConnection;
  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    if (connection) closeRedis(connection);
    await redis?.stop();
  });

  it('leaks no place under the ceiling: the instance counts none in flight once its requests are settled', async () => {
    connection = connectRedis({ kind: 'server', url: redis.url }, silent);
    const admission = createRedisAdmission({ requests: 600, windowSeconds: 60, redis: connection, logger: silent });
    const usage: CallerUsage = {
      used: 0,
      ceiling: 10_000,
      periodEnd: new Date('2026-12-01T00:00:00.000Z'),
      acknowledgedBefore: 0,
    };
    const org = 'org_turning';
    await eventually('admission available', () => admission.available());
    // A first call tells the instance what is left, so the next one leases.
    (await admission.take(org, LAST_MOMENT, usage)).keep();
    const leasing = admission.take(org, LAST_MOMENT, usage);
    // The call is out (sent in this check phase); the window turns before its answer is read.
    await new Promise((resolve) => setImmediate(resolve));
    const turned = admission.take(org, NEXT_WINDOW, usage);
    (await leasing).keep();
    (await turned).keep();
    const inFlight = async () => {
      const fields = await withClient(redis.port, (client) => client.hgetall(ceilingKey(org)));
      return Object.entries(fields)
        .filter(([field]) => field !== 'gone' && field !== 'gone period')
        .reduce((sum, [, value]) => sum + Number(value.split(' ')[2]), 0);
    };
    // Units leased and unused go back within a second or two idle; every request was settled (kept).
    let left = await inFlight();
    for (const until = Date.now() + 5000; left !== 0 && Date.now() < until; left = await inFlight()) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(left, 0, 'places in flight once every request is settled');
    await admission.close();
  });
});
