import assert from 'node:assert/strict';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createReadiness, platformProbe, type Readiness } from '../../src/http/readiness.js';
import { createGatewayMetrics } from '../../src/metrics/gatewayMetrics.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { fakeServices, PLATFORM_TOKEN, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

const KEY_SERVICE_URL = 'http://keys.test';

describe('readiness', () => {
  describe('GET /readyz and gateway_dependency_up', () => {
    let server: Awaited<ReturnType<typeof listen>>;
    let readiness: Readiness;
    let redisUp = true;
    // Probes run when a scrape asks (the clock moved on), not when /readyz reads the last report.
    let clock = 0;
    const logged: string[] = [];

    before(async () => {
      const platform = createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 500 });
      const keyService = createKeyServiceClient({ url: KEY_SERVICE_URL, token: 'key-service-token', timeoutMs: 500 });
      readiness = createReadiness(
        {
          platform: platformProbe(platform),
          keyService: () => keyService.isReady(),
          redis: () => redisUp,
        },
        {
          maxAgeMs: 1000,
          now: () => clock,
          logger: pino({ level: 'info' }, { write: (line: string) => logged.push(line) }),
        },
      );
      const metrics = createGatewayMetrics();
      metrics.observeDependencies(readiness.dependencies);
      server = await listen(createApp(fakeServices({ readiness, metrics })));
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
    /** The metric's samples, scraped the way Prometheus does (the scrape runs the probes). */
    async function dependencyUp(): Promise<Record<string, number>> {
      clock += 1000;
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const samples: Record<string, number> = {};
      for (const match of text.matchAll(/^gateway_dependency_up\{dependency="(\w+)"\} (\d)$/gm)) {
        samples[match[1] ?? ''] = Number(match[2]);
      }
      return samples;
    }

    it('answers 503 while starting, needs no key, and 200 once serving', async () => {
      const starting = await readyz();
      assert.equal(starting.status, 503);
      assert.equal(starting.retryAfter, '5');
      assert.equal(starting.body.status, 'starting');
      readiness.serving();
      const scopes = [platformUp(), keyServiceUp()];
      assert.deepEqual(await dependencyUp(), { platform: 1, keyService: 1, redis: 1 });
      for (const scope of scopes) scope.done();
      const answer = await readyz();
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { status: 'serving', checks: { platform: true, keyService: true, redis: true } });
    });

    it('stays 200 while a shared dependency is down: the body and the metric say which, one log line, no host or error text', async () => {
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
        assert.deepEqual(await dependencyUp(), { platform: 1, keyService: 1, redis: 1, [down.name]: 0 }, down.name);
        for (const scope of scopes) scope.done();
        const answer = await readyz();
        assert.equal(answer.status, 200, down.name);
        const checks = { platform: true, keyService: true, redis: true, [down.name]: false };
        assert.deepEqual(answer.body, { status: 'serving', checks });
        assert.doesNotMatch(JSON.stringify(answer.body), /keys\.test|platform\.test|127\.0\.0\.1|ECONNREFUSED|503/);
        const lines = logged
          .map((line) => JSON.parse(line) as Record<string, unknown>)
          .filter((line) => line.msg === 'dependency down');
        assert.equal(lines.length, 1, logged.join(''));
        assert.equal(lines[0]?.dependency, down.name);
        assert.equal(typeof lines[0]?.failure, 'string');
        assert.doesNotMatch(logged.join(''), /\bat .+:\d+:\d+/, 'no stack in the log');

        redisUp = true;
        const back = [platformUp(), keyServiceUp()];
        assert.deepEqual(await dependencyUp(), { platform: 1, keyService: 1, redis: 1 }, `${down.name} back`);
        for (const scope of back) scope.done();
      }
    });

    it('answers 503 once draining, at once', async () => {
      readiness.draining();
      const answer = await readyz();
      assert.equal(answer.status, 503);
      assert.equal(answer.body.status, 'draining');
    });
  });

  describe('createReadiness', () => {
    it('counts a probe that throws or never answers as down, and never throws itself', async () => {
      const readiness = createReadiness(
        {
          fine: async () => true,
          throws: () => {
            throw new Error('boom');
          },
          hangs: () => new Promise<boolean>(() => {}),
          says_no: async () => false,
        },
        { timeoutMs: 50, maxAgeMs: 0, phase: 'serving' },
      );
      assert.deepEqual(await readiness.dependencies(), { fine: true, throws: false, hangs: false, says_no: false });
      assert.equal(readiness.report().ready, true, 'dependencies never fail readiness');
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
      readiness.report();
      await Promise.all([readiness.dependencies(), readiness.dependencies(), readiness.dependencies()]);
      assert.equal(calls, 1);
      clock = 999;
      readiness.report();
      await readiness.dependencies();
      assert.equal(calls, 1);
      clock = 1000;
      await readiness.dependencies();
      assert.equal(calls, 2);
    });
  });

  describe('the key service probe (isReady)', () => {
    it('is ready on 404 or 200; not on 401, 5xx or no connection; and reports each call', async () => {
      const calls: string[] = [];
      const keyService = createKeyServiceClient({
        url: KEY_SERVICE_URL,
        token: 't',
        timeoutMs: 500,
        onCall: (operation, _seconds, outcome) => calls.push(`${operation}:${outcome}`),
      });
      const probe = () => keyService.isReady();
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
