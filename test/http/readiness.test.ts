import assert from 'node:assert/strict';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createReadiness } from '../../src/http/readiness.js';
import { keyServiceProbe, platformProbe } from '../../src/http/readinessProbes.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { fakeServices, PLATFORM_TOKEN, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

const KEY_SERVICE_URL = 'http://keys.test';

describe('readiness', () => {
  describe('GET /readyz', () => {
    let server: Awaited<ReturnType<typeof listen>>;
    let redisUp = true;
    const logged: string[] = [];

    before(async () => {
      const platform = createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 500 });
      const readiness = createReadiness(
        {
          platform: platformProbe(platform),
          keyService: keyServiceProbe(
            createKeyServiceClient({ url: KEY_SERVICE_URL, token: 'key-service-token', timeoutMs: 500 }),
          ),
          redis: () => redisUp,
        },
        { maxAgeMs: 0, logger: pino({ level: 'info' }, { write: (line: string) => logged.push(line) }) },
      );
      server = await listen(createApp(fakeServices({ readiness })));
    });
    after(() => server.close());

    const platformUp = () =>
      nock('http://platform.test', { reqheaders: { authorization: `Bearer ${PLATFORM_TOKEN}` } })
        .post('/graphql', (body: { query: string }) => /__typename/.test(body.query))
        .reply(200, { data: { __typename: 'Query' } });
    const keyServiceUp = () =>
      nock(KEY_SERVICE_URL, { reqheaders: { authorization: 'Bearer key-service-token' } })
        .post('/v1/keys/verify', { keyHash: '0'.repeat(64) })
        .reply(404, { error: 'unknown_key' });

    async function readyz() {
      const res = await fetch(`${server.url}/readyz`);
      return {
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        body: (await res.json()) as Record<string, unknown>,
      };
    }

    it('answers 200 while every upstream answers, and needs no key', async () => {
      const scopes = [platformUp(), keyServiceUp()];
      const answer = await readyz();
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { checks: { platform: true, keyService: true, redis: true } });
      for (const scope of scopes) scope.done();
    });

    it('flips to 503 with the same { checks } shape while one upstream is gone, logging one line, and back', async () => {
      const cases: Array<{ name: string; scopes: () => nock.Scope[]; redis: boolean }> = [
        {
          name: 'platform',
          scopes: () => [
            nock('http://platform.test')
              .post('/graphql')
              .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
            keyServiceUp(),
          ],
          redis: true,
        },
        {
          name: 'keyService',
          scopes: () => [platformUp(), nock(KEY_SERVICE_URL).post('/v1/keys/verify').reply(503, 'down')],
          redis: true,
        },
        { name: 'redis', scopes: () => [platformUp(), keyServiceUp()], redis: false },
      ];
      for (const down of cases) {
        redisUp = down.redis;
        const scopes = down.scopes();
        logged.length = 0;
        const answer = await readyz();
        assert.equal(answer.status, 503, down.name);
        assert.equal(answer.retryAfter, '5');
        const checks = { platform: true, keyService: true, redis: true, [down.name]: false };
        assert.deepEqual(answer.body, { checks });
        assert.doesNotMatch(JSON.stringify(answer.body), /keys\.test|platform\.test|ECONNREFUSED/);
        const lines = logged
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((line) => line.msg === 'not ready');
        assert.equal(lines.length, 1, logged.join(''));
        assert.deepEqual(lines[0]?.checks, checks);
        assert.equal(typeof (lines[0]?.failures as Record<string, unknown> | undefined)?.[down.name], 'string');
        assert.doesNotMatch(logged.join(''), /\bat .+:\d+:\d+/, 'no stack in the log');
        for (const scope of scopes) scope.done();

        redisUp = true;
        const back = [platformUp(), keyServiceUp()];
        assert.equal((await readyz()).status, 200, `${down.name} back`);
        for (const scope of back) scope.done();
      }
    });
  });

  describe('createReadiness', () => {
    it('counts a probe that throws or never answers as not ready, and never throws itself', async () => {
      const readiness = createReadiness(
        {
          fine: async () => true,
          throws: () => {
            throw new Error('boom');
          },
          hangs: () => new Promise<boolean>(() => {}),
          says_no: async () => false,
        },
        { timeoutMs: 50, maxAgeMs: 0 },
      );
      assert.deepEqual(await readiness.check(), {
        ready: false,
        checks: { fine: true, throws: false, hangs: false, says_no: false },
      });
    });

    it('shares one run between concurrent checks and reuses a fresh report', async () => {
      let calls = 0;
      let clock = 0;
      const readiness = createReadiness(
        {
          counted: async () => {
            calls += 1;
            return true;
          },
        },
        { maxAgeMs: 1000, now: () => clock },
      );
      await Promise.all([readiness.check(), readiness.check(), readiness.check()]);
      assert.equal(calls, 1);
      clock = 999;
      await readiness.check();
      assert.equal(calls, 1);
      clock = 1000;
      await readiness.check();
      assert.equal(calls, 2);
    });
  });

  describe('keyServiceProbe', () => {
    it('is ready on 404 or 200; not on 401, 5xx or no connection; and reports each call', async () => {
      const calls: string[] = [];
      const probe = keyServiceProbe(
        createKeyServiceClient({
          url: KEY_SERVICE_URL,
          token: 't',
          timeoutMs: 500,
          onCall: (operation, _seconds, outcome) => calls.push(`${operation}:${outcome}`),
        }),
      );
      const scope = nock(KEY_SERVICE_URL)
        .post('/v1/keys/verify')
        .reply(404, { error: 'unknown_key' })
        .post('/v1/keys/verify')
        .reply(401)
        .post('/v1/keys/verify')
        .reply(503, '', { 'Retry-After': '3' })
        .post('/v1/keys/verify')
        .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      assert.deepEqual([await probe(), await probe(), await probe(), await probe()], [true, false, false, false]);
      assert.deepEqual(calls, ['probe:ok', 'probe:bad_answer', 'probe:throttled', 'probe:unreachable']);
      scope.done();
    });
  });
});
