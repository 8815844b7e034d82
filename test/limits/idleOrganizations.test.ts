import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { childEnvironment } from '../support/childEnvironment.js';
import { startProcessGroup } from '../support/processGroup.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { withClient } from '../support/redisTopology.js';
import type { IdleScenarioResult } from './idleScenario.js';

/**
 * What an instance keeps per organization is dropped once the organization is idle (src/usage/README.md, "Bounded
 * state"): 20,000 organizations that call a few times over ten minutes of a clock the scenario moves, then stop
 * (test/limits/idleScenario.ts, in a process of its own so that its RSS is the admission's).
 */

const SCENARIO = fileURLToPath(new URL('./idleScenario.ts', import.meta.url));
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

async function runScenario(redisUrl?: string): Promise<IdleScenarioResult> {
  const group = startProcessGroup(process.execPath, ['--import', 'tsx', SCENARIO, ...(redisUrl ? [redisUrl] : [])], {
    cwd: REPO_ROOT,
    env: childEnvironment(),
  });
  try {
    const exit = await group.exitWithin(100_000);
    assert.deepEqual(exit, { code: 0, signal: null }, group.stderr());
    const result = JSON.parse(group.stdout().trim().split('\n').at(-1) ?? '') as IdleScenarioResult;
    console.log(`      ${JSON.stringify(result)}`);
    return result;
  } finally {
    await group.destroy();
  }
}

const assertBounded = (result: IdleScenarioResult) => {
  assert.ok(result.peakRssMb < 250, `peak RSS ${result.peakRssMb} MB`);
  assert.ok(result.trackedAfterCalls > 5000, 'the organizations of the last minutes are tracked while they call');
  assert.equal(result.trackedAfterIdle, 0, 'none tracked once all are idle');
};

describe('state kept per organization: 20,000 organizations that call and stop', function () {
  this.timeout(240_000);

  it('without Redis: peak RSS below 250 MB, and the tracked organizations back to zero once idle', async () => {
    assertBounded(await runScenario());
  });

  describe('with Redis', () => {
    let redis: RedisServer;
    before(async function () {
      skipWithoutRedis(this);
      redis = await startRedisServer();
    });
    after(async () => {
      await redis?.stop();
    });

    it('peak RSS below 250 MB, the tracked organizations back to zero once idle, and every key written expires', async () => {
      assertBounded(await runScenario(redis.url));
      const keys = await withClient(redis.port, async (client) => {
        const all = await client.keys('*');
        const ttls = await Promise.all(all.map(async (key) => [key, await client.pttl(key)] as const));
        return { all: all.length, withoutExpiry: ttls.filter(([, ttl]) => ttl < 0).map(([key]) => key) };
      });
      assert.ok(keys.all > 10_000, `${keys.all} keys written`);
      assert.deepEqual(keys.withoutExpiry, []);
    });
  });
});
