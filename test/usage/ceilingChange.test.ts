import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { testKey, type VerifyAnswerJson, verifyAnswer } from '../support/keys.js';
import {
  answerEveryPlatformCall,
  countOf,
  type MeteredGateway,
  type MeteredGatewayOptions,
  startMeteredGateway,
  statusesOf,
} from '../support/meteredGateway.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';

/**
 * The ceiling holds when it changes: lowered to 5 calls of headroom while the instance
 * holds places taken under a far higher one, 25 requests at once with a key it has never
 * seen get exactly 5 answers; the same after the instance restarted, and after the
 * ceiling was removed and set again. With Redis as without.
 */

const HIGH_CEILING = 100_000;
const periodEnd = new Date(Date.now() + 9 * 86_400_000).toISOString();

function ceilingChanges(redis: () => RedisServer | null) {
  let keyService: FakeKeyService;
  let gateway: MeteredGateway | null = null;
  const answers: VerifyAnswerJson[] = [];
  let keys = 0;
  const firstKey = testKey('ceiling change first');

  const start = async () => {
    const server = redis();
    const options: MeteredGatewayOptions = server ? { redis: { kind: 'server', url: server.url } } : {};
    gateway = await startMeteredGateway(keyService, options);
    await eventually('following the event stream', () => keyService.openStreams() === 1);
    return gateway;
  };
  /** A key of org_a the instance has not seen, under the organization's current ceiling. */
  const newKey = (): string => {
    const key = testKey(`ceiling change ${keys++}`);
    const used = answers[0]?.organization.usage.used ?? 0;
    const ceiling = answers[0]?.organization.usage.ceiling ?? HIGH_CEILING;
    const answer = verifyAnswer(key, { usage: { used, ceiling, periodEnd } });
    answers.push(answer);
    keyService.setAnswer(key, answer);
    return key;
  };
  /** Sets the organization's ceiling on every key's answer and tells the instances. */
  const setCeiling = async (headroom: number | null) => {
    for (const answer of answers) {
      const { usage } = answer.organization;
      usage.ceiling = headroom === null ? null : usage.used + headroom;
    }
    keyService.sendEvent('organization.updated', { organizationId: 'org_a' });
    await new Promise((resolve) => setTimeout(resolve, 100));
  };
  /** Far from the ceiling: the instance serves a key and holds places in advance. */
  const busy = async (instance: MeteredGateway) => {
    const statuses = await statusesOf(instance.url, firstKey, 60, 10);
    assert.equal(countOf(statuses, 200), 60, statuses.join());
    await eventually('usage delivered', () => instance.usage.pendingTotal() === 0);
  };
  const servedToUnseenKey = async (instance: MeteredGateway) => {
    const statuses = await statusesOf(instance.url, newKey(), 25, 25);
    await eventually('usage delivered', () => instance.usage.pendingTotal() === 0);
    return countOf(statuses, 200);
  };

  beforeEach(async () => {
    answerEveryPlatformCall();
    keyService = await startFakeKeyService();
    answers.length = 0;
    const first = verifyAnswer(firstKey, { usage: { used: 0, ceiling: HIGH_CEILING, periodEnd } });
    answers.push(first);
    keyService.setAnswer(firstKey, first);
  });
  afterEach(async () => {
    await gateway?.close();
    gateway = null;
    await keyService.close();
    await redis()
      ?.command('FLUSHALL')
      .catch(() => undefined);
  });

  it('serves 5 of 25 once the ceiling is lowered to 5 calls of headroom', async () => {
    const instance = await start();
    await busy(instance);
    await setCeiling(5);
    assert.equal(await servedToUnseenKey(instance), 5);
  });

  it('serves 5 of 25 after the instance restarted', async () => {
    await busy(await start());
    await gateway?.close();
    const instance = await start();
    await busy(instance);
    await setCeiling(5);
    assert.equal(await servedToUnseenKey(instance), 5);
  });

  it('serves 5 of 25 after the ceiling was removed and set again', async () => {
    const instance = await start();
    await busy(instance);
    await setCeiling(null);
    await busy(instance);
    await setCeiling(5);
    assert.equal(await servedToUnseenKey(instance), 5);
  });
}

describe('a ceiling lowered while places are held (one instance, no Redis)', function () {
  this.timeout(30_000);
  ceilingChanges(() => null);
});

describe('a ceiling lowered while places are held (Redis)', function () {
  this.timeout(30_000);
  let redis: RedisServer | null = null;
  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    await redis?.stop();
  });
  ceilingChanges(() => redis);
});
