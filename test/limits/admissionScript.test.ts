import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ceilingKey, defineAdmissionScripts, sendingKey, windowKey } from '../../src/limits/admissionScript.js';
import { closeRedis, connectRedis, type RedisConnection } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';

/** The admission script on a real redis-server, called directly. */

const ORG = 'org_script';
const WINDOW = 7;
const LIFETIME = 60_000;
const PERIOD_END = Date.UTC(2026, 11, 1);

describe('admission script (Redis)', () => {
  let redis: RedisServer;
  let connection: RedisConnection;

  /** One call as an instance makes it: its own counts, a verification, how many it wants. */
  const admit = (
    instance: string,
    want: number,
    counts: { taken?: number; waiting?: number; acknowledged?: number; inFlight?: number; sending?: number } = {},
    usage: { ceiling: number | ''; used?: number; acknowledgedBefore?: number; periodEnd?: number } = { ceiling: '' },
    allowance = 1000,
  ) =>
    connection.admit(
      windowKey(ORG, WINDOW),
      ceilingKey(ORG),
      sendingKey(ORG),
      instance,
      counts.taken ?? 0,
      allowance,
      LIFETIME,
      want,
      usage.ceiling,
      usage.used ?? 0,
      usage.acknowledgedBefore ?? 0,
      counts.waiting ?? 0,
      counts.acknowledged ?? 0,
      counts.inFlight ?? 0,
      15_000,
      LIFETIME,
      counts.sending ?? 0,
      usage.ceiling === '' ? '' : (usage.periodEnd ?? PERIOD_END),
    );
  const field = (instance: string) => connection.hget(ceilingKey(ORG), instance);

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
    connection = connectRedis({ kind: 'server', url: redis.url }, pino({ level: 'silent' }));
    defineAdmissionScripts(connection);
    await eventually('connected', () => connection.status === 'ready');
  });
  after(async () => {
    if (connection) closeRedis(connection);
    await redis?.stop();
  });
  beforeEach(async () => {
    await connection.flushall();
  });

  it('grants the limit whole or not, and no more than the allowance over instances', async () => {
    const none = { ceiling: '' } as const;
    assert.deepEqual(await admit('a', 6, {}, none, 10), [6, 6, 0, 0]);
    assert.deepEqual(await admit('b', 6, {}, none, 10), [4, 10, 0, 0]);
    assert.deepEqual(await admit('a', 1, { taken: 6 }, none, 10), [0, 10, 0, 0]);
  });

  it('takes back what an instance says it no longer holds (units leased and unused), and leaves the count alone at -1', async () => {
    await admit('a', 8);
    await admit('b', 2);
    assert.deepEqual(await admit('a', 0, { taken: 3 }), [0, 5, 0, 0]);
    assert.deepEqual(await admit('b', 0, { taken: -1 }), [0, 5, 0, 0]);
    assert.equal(await connection.hget(windowKey(ORG, WINDOW), 'a'), '3');
  });

  it('adds back what an instance took when Redis forgot it, and a repeated write changes nothing', async () => {
    await admit('a', 3);
    await admit('b', 2);
    await connection.flushall();
    assert.deepEqual(await admit('a', 0, { taken: 3 }), [0, 3, 0, 0]);
    assert.deepEqual(await admit('a', 0, { taken: 3 }), [0, 3, 0, 0]);
    assert.deepEqual(await admit('b', 0, { taken: 2 }), [0, 5, 0, 0]);
  });

  it('admits while used + waiting + in flight + acknowledgements since the verify stay under the ceiling', async () => {
    // Ceiling 100, used 80: 20 left. Instance b has 4 waiting and 2 in flight; 3 acknowledged since the verify.
    await admit('b', 0, { waiting: 4, acknowledged: 13, inFlight: 2 }, { ceiling: 100, used: 80 });
    const usage = { ceiling: 100, used: 80, acknowledgedBefore: 10 };
    const [granted, , room] = await admit('a', 20, {}, usage);
    assert.equal(granted, 20 - 4 - 2 - 3);
    assert.equal(room, 0);
    assert.deepEqual((await field('a'))?.split(' ').slice(0, 3), ['0', '0', '11']);
    // Written whole again (a repeat, or after a restart): the same answer.
    assert.equal((await admit('a', 1, { inFlight: 11 }, usage))[0], 0);
    assert.equal((await admit('a', 1, { inFlight: 11 }, usage))[0], 0);
  });

  it('tells how many calls may be counted twice: those on their way to the key service and those acknowledged since the verify', async () => {
    // Ceiling 100, used 90: b has 6 waiting, 4 of them on their way; 3 acknowledged since the verify.
    await admit('b', 0, { waiting: 6, acknowledged: 13, sending: 4 }, { ceiling: 100, used: 90 });
    const usage = { ceiling: 100, used: 90, acknowledgedBefore: 10 };
    const [granted, , room, doubt] = await admit('a', 5, { sending: 2 }, usage);
    assert.equal(granted, 1, '90 + 6 waiting + 3 since the verify leave one place');
    assert.equal(room, 0);
    assert.equal(doubt, 4 + 2 + 3, "b's and a's calls on their way, and the acknowledgements since the verify");
    // Acknowledged: b writes nothing on its way; a's own count follows its writes.
    await admit('b', 0, { waiting: 2, acknowledged: 17 }, { ceiling: 100, used: 90 });
    assert.equal((await admit('a', 0, { inFlight: 1 }, usage))[3], 7, 'only the acknowledgements since the verify');
  });

  it("forgets a silent instance's calls on their way once its field's time has passed", async () => {
    await connection.hset(sendingKey(ORG), 'gone-instance', '9 1000');
    const [, , , doubt] = await admit('a', 1, {}, { ceiling: 100, used: 0 });
    assert.equal(doubt, 0);
    assert.equal(await connection.hget(sendingKey(ORG), 'gone-instance'), null);
  });

  it("drops a silent instance's in-flight calls once its field's time has passed, keeping what it recorded", async () => {
    // An instance gone long ago: 3 waiting, 5 acknowledged, 7 in flight.
    await connection.hset(ceilingKey(ORG), 'gone-instance', '3 5 7 1000');
    const [granted] = await admit('a', 100, {}, { ceiling: 100, used: 0, acknowledgedBefore: 5 });
    assert.equal(granted, 100 - 3, 'its 3 waiting count, its 7 in flight no longer');
    assert.equal(await field('gone-instance'), null, 'folded');
    assert.equal(await field('gone'), '3 5 0 0');
    assert.equal(await connection.acknowledgedCalls(ceilingKey(ORG)), 5);
  });

  it('adds a silent instance folded after `gone` was written to what `gone` holds', async () => {
    await connection.hset(ceilingKey(ORG), 'gone-instance', '2 3 0 1000');
    await connection.hset(ceilingKey(ORG), 'gone', '1 1 0 0');
    await admit('a', 1, {}, { ceiling: 100, used: 0, acknowledgedBefore: 4 });
    assert.equal(await field('gone'), '3 4 0 0');
    assert.equal(await connection.acknowledgedCalls(ceilingKey(ORG)), 4);
  });

  it('keeps in the sums what an instance wrote before it forgot the organization, once it counts from zero again', async () => {
    await admit('a', 0, { waiting: -2, acknowledged: 9 }, { ceiling: 100, used: 50 });
    const [granted] = await admit('a', 100, {}, { ceiling: 100, used: 50, acknowledgedBefore: 9 });
    assert.equal(granted, 100 - 50 + 2, 'its -2 waiting still counted');
    assert.equal(await field('gone'), '-2 9 0 0');
    assert.equal(await connection.acknowledgedCalls(ceilingKey(ORG)), 9);
  });

  it("starts a new period from the key service's count alone: dead instances' calls and the offsets against them stay in the period that ended", async () => {
    const next = Date.UTC(2027, 0, 1);
    const organizations = Array.from({ length: 20 }, (_, i) => `org_period_${i}`);
    const write = (
      organization: string,
      instance: string,
      want: number,
      waiting: number,
      acknowledged: number,
      usage: { used: number; acknowledgedBefore: number; periodEnd: number },
    ) =>
      connection.admit(
        windowKey(organization, WINDOW),
        ceilingKey(organization),
        sendingKey(organization),
        instance,
        0,
        1000,
        LIFETIME,
        want,
        100,
        usage.used,
        usage.acknowledgedBefore,
        waiting,
        acknowledged,
        0,
        15_000,
        LIFETIME,
        0,
        usage.periodEnd,
      );
    for (const [i, organization] of organizations.entries()) {
      // Earlier dead instances: i calls recorded and lost; one dead since: 5 recorded, 3 of them taken over and
      // acknowledged by the live instance (its waiting -3), 2 lost.
      await connection.hset(ceilingKey(organization), 'gone', `${i} 6 0 0`, 'dead-instance', '5 4 0 1000');
      const [, , roomBefore] = await write(organization, 'live', 0, -3, 10, {
        used: 50,
        acknowledgedBefore: 20,
        periodEnd: PERIOD_END,
      });
      assert.equal(roomBefore, 100 - 50 - (i + 5 - 3), 'within its period the lost calls count');
    }
    for (const organization of organizations) {
      // The next period: the live instance keeps nothing, and counts what it keeps (startPeriod).
      const usage = { used: 0, acknowledgedBefore: 20, periodEnd: next };
      const [granted, , room] = await write(organization, 'live', 100, 0, 10, usage);
      assert.deepEqual([granted, room], [100, 0], `${organization}: the whole ceiling, as the key service counts`);
      assert.equal(
        await connection.acknowledgedCalls(ceilingKey(organization)),
        20,
        'acknowledgements stay in the sums',
      );
      assert.equal(await connection.hget(ceilingKey(organization), 'dead-instance'), null);
      // An instance still in the period that ended counts what it keeps, in the new one too.
      const [, , roomAfter] = await write(organization, 'other', 0, 2, 0, {
        used: 0,
        acknowledgedBefore: 20,
        periodEnd: PERIOD_END,
      });
      assert.equal(roomAfter, 100 - 100 - 2);
      const [again] = await write(organization, 'live', 1, 100, 10, usage);
      assert.equal(again, 0, 'its 100 recorded: no place past the ceiling');
    }
  });

  it('writes no ceiling key for an organization that never had one', async () => {
    await admit('a', 1, { waiting: 3 });
    assert.equal(await connection.exists(ceilingKey(ORG)), 0);
  });
});
