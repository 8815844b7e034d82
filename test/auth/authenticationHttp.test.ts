import assert from 'node:assert/strict';
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createUsageLedger } from '../../src/usage/usageLedger.js';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import type { RequestLimiter } from '../../src/limits/requestLimiter.js';
import { createKeyServiceClient, type KeyServiceCall } from '../../src/upstream/keyServiceClient.js';
import { fakeServices, FIXED_NOW, PLATFORM_URL, unlimitedLimiter } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, testKey, verifyAnswer, withBadChecksum, type VerifyAnswerOverrides } from '../support/keys.js';

/**
 * Authentication through the whole app: status, envelope, WWW-Authenticate and
 * Retry-After as a consumer sees them, with the real key-service client against nock.
 */

const KEY_SERVICE = 'http://key-service.test';
const KEY = testKey('http reader');
const OTHER_KEY = testKey('http other');
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMTkifQ.c2lnbmF0dXJl';
const PATH = '/v1/api/keywords?site=example.com';

interface Answer {
  status: number;
  headers: Headers | Record<string, string | string[] | undefined>;
  text: string;
  json: { data: unknown; meta: { requestId?: string }; errors: Array<{ code: string; message: string; reason?: string }> };
}

describe('authentication over HTTP', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let authenticator: KeyAuthenticator;
  let keyServiceCalls: Array<{ call: KeyServiceCall; outcome: string }>;
  let limiterCalls: string[];

  /** The app with the real key authenticator; `timeoutMs` bounds each key-service call. */
  async function serve(timeoutMs: number) {
    const keyService = createKeyServiceClient({
      url: KEY_SERVICE,
      token: 'key-service-token',
      timeoutMs,
      onCall: (call, _seconds, outcome) => keyServiceCalls.push({ call, outcome }),
    });
    const keyAuthenticator = createKeyAuthenticator({
      keyService,
      ledger: createUsageLedger(),
      now: () => FIXED_NOW,
      logger: pino({ level: 'silent' }),
    });
    const limiter: RequestLimiter = {
      async take(organizationId) {
        limiterCalls.push(organizationId);
        return unlimitedLimiter().take(organizationId);
      },
      async close() {},
    };
    return { authenticator: keyAuthenticator, server: await listen(createApp(fakeServices({ authenticator: keyAuthenticator, limiter }))) };
  }

  before(async () => {
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
    keyServiceCalls = [];
    limiterCalls = [];
    // Generous: only the timeout test (its own app) is meant to run out of time.
    ({ authenticator, server } = await serve(5000));
  });
  beforeEach(() => {
    keyServiceCalls.length = 0;
    limiterCalls.length = 0;
  });
  afterEach(() => nock.cleanAll());
  after(async () => {
    await authenticator.close();
    await server.close();
    nock.enableNetConnect();
  });

  async function get(headers: Record<string, string>, path = PATH, base = server.url): Promise<Answer> {
    const res = await fetch(`${base}${path}`, { headers });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as Answer['json'] };
  }

  /** Sends header lines exactly as given (an array is sent as repeated lines, which fetch cannot do). */
  function getRaw(headers: OutgoingHttpHeaders): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${server.url}${PATH}`, { headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: JSON.parse(text) as Answer['json'] }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  }

  function keyServiceAnswers(key: string, overrides: VerifyAnswerOverrides = {}) {
    return nock(KEY_SERVICE).post('/v1/keys/verify', { keyHash: keyHashOf(key) }).reply(200, verifyAnswer(key, overrides));
  }

  /** The platform answering the keywords route, only for the given organization. */
  function platformAnswersFor(organizationId: string) {
    return nock(new URL(PLATFORM_URL).origin)
      .post('/graphql', (body: { variables: Record<string, unknown> }) => body.variables.organizationId === organizationId)
      .reply(200, {
        data: {
          organization: {
            siteLookup: [
              {
                id: 'site_1',
                ranked: { totalCount: 0, edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
                unranked: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
              },
            ],
          },
        },
      });
  }

  function header(answer: Answer, name: string): string | undefined {
    const value = answer.headers instanceof Headers ? answer.headers.get(name) : answer.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : (value ?? undefined);
  }

  function assertRefused(answer: Answer, status: 401 | 403, reason: string): void {
    assert.equal(answer.status, status, answer.text);
    assert.equal(answer.json.data, null);
    assert.equal(typeof answer.json.meta.requestId, 'string');
    assert.equal(answer.json.errors.length, 1);
    assert.equal(answer.json.errors[0]?.code, status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN');
    assert.equal(answer.json.errors[0]?.reason, reason);
    assert.equal(header(answer, 'www-authenticate'), status === 401 ? 'Bearer' : undefined);
    assert.doesNotMatch(answer.text, /atl_/, 'the body echoes key text');
    assert.deepEqual(limiterCalls, [], 'the limiter ran before authentication decided');
  }

  describe('accepted', () => {
    it('lets in a valid key from Authorization: Bearer, for its own organization only', async () => {
      const keyService = keyServiceAnswers(KEY, { key: { organizationId: 'org_7Hq2' } });
      const platform = platformAnswersFor('org_7Hq2');
      const answer = await get({ authorization: `Bearer ${KEY}` });
      assert.equal(answer.status, 200, answer.text);
      assert.deepEqual(limiterCalls, ['org_7Hq2']);
      keyService.done();
      platform.done();
    });

    it('lets in a valid key from X-API-Key, and with a lowercase scheme', async () => {
      const keyService = keyServiceAnswers(KEY).persist();
      const platform = platformAnswersFor('org_a').persist();
      assert.equal((await get({ 'x-api-key': KEY })).status, 200);
      assert.equal((await get({ authorization: `bearer ${KEY}` })).status, 200);
      assert.equal((await get({ authorization: `Bearer ${KEY}`, 'x-api-key': KEY })).status, 200);
      keyService.done();
      platform.done();
    });
  });

  describe('401 (spec 5.3: missing, malformed, unknown, expired, revoked)', () => {
    it('missing key', async () => {
      assertRefused(await get({}), 401, 'missing_key');
      assert.deepEqual(keyServiceCalls, []);
    });

    it('malformed key, without asking the key service', async () => {
      for (const text of ['atl_tooShort', `${KEY}x`, 'secret-value', KEY.replace('atl_', 'atl-')]) {
        assertRefused(await get({ authorization: `Bearer ${text}` }), 401, 'malformed_key');
        assertRefused(await get({ 'x-api-key': text }), 401, 'malformed_key');
      }
      assert.deepEqual(keyServiceCalls, []);
      assert.deepEqual(nock.pendingMocks(), []);
    });

    it('bad checksum, without asking the key service', async () => {
      assertRefused(await get({ authorization: `Bearer ${withBadChecksum(KEY)}` }), 401, 'malformed_key');
      assert.deepEqual(keyServiceCalls, []);
    });

    it('unknown key', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify', { keyHash: keyHashOf(OTHER_KEY) }).reply(404, { error: 'unknown_key' });
      assertRefused(await get({ authorization: `Bearer ${OTHER_KEY}` }), 401, 'invalid_key');
      scope.done();
    });

    it('expired key (expiresAt ≤ now), with a reason saying so', async () => {
      const scope = keyServiceAnswers(KEY, { key: { expiresAt: FIXED_NOW.toISOString() } });
      assertRefused(await get({ authorization: `Bearer ${KEY}` }), 401, 'expired_key');
      scope.done();
    });

    it('revoked key: the same answer as an unknown key, and again after revoking again', async () => {
      const unknownKey = testKey('never issued');
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify', { keyHash: keyHashOf(unknownKey) })
        .reply(404, { error: 'unknown_key' })
        .post('/v1/keys/verify', { keyHash: keyHashOf(KEY) })
        .times(2)
        .reply(200, verifyAnswer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } }));
      const unknown = await get({ authorization: `Bearer ${unknownKey}` });
      const revoked = await get({ authorization: `Bearer ${KEY}` });
      const revokedAgain = await get({ authorization: `Bearer ${KEY}` });
      for (const answer of [unknown, revoked, revokedAgain]) assertRefused(answer, 401, 'invalid_key');
      const withoutRequestId = (answer: Answer) => ({ status: answer.status, errors: answer.json.errors, data: answer.json.data });
      assert.deepEqual(withoutRequestId(revoked), withoutRequestId(unknown));
      assert.deepEqual(withoutRequestId(revokedAgain), withoutRequestId(unknown));
      scope.done();
    });

    it('both headers with different keys', async () => {
      assertRefused(await get({ authorization: `Bearer ${KEY}`, 'x-api-key': OTHER_KEY }), 401, 'conflicting_credentials');
      assert.deepEqual(keyServiceCalls, []);
    });

    it('repeated X-API-Key or Authorization lines with different keys', async () => {
      assertRefused(await getRaw({ 'x-api-key': [KEY, OTHER_KEY] }), 401, 'conflicting_credentials');
      assertRefused(await getRaw({ authorization: [`Bearer ${KEY}`, `Bearer ${OTHER_KEY}`] as unknown as string }), 401, 'conflicting_credentials');
      assert.deepEqual(keyServiceCalls, []);
    });

    it('a key in the query string, even with a valid header: use the header and rotate the key', async () => {
      const paths = [
        `${PATH}&api_key=${KEY}`,
        `${PATH}&apikey=${KEY}`,
        `${PATH}&token=x`,
        `${PATH}&access_token=${KEY}`,
        `${PATH}&KEY=${KEY}`,
        `${PATH}&anything=${KEY}`,
        `/v1/api/keywords?site=${KEY}`,
      ];
      for (const path of paths) {
        const answer = await get({ authorization: `Bearer ${KEY}` }, path);
        assertRefused(answer, 401, 'key_in_query');
        assert.match(answer.json.errors[0]?.message ?? '', /header/i);
        assert.match(answer.json.errors[0]?.message ?? '', /rotate/i);
      }
      assert.deepEqual(keyServiceCalls, []);
    });

    it('another authorization scheme', async () => {
      assertRefused(await get({ authorization: `Basic ${Buffer.from(`u:${KEY}`).toString('base64')}` }), 401, 'unsupported_scheme');
    });
  });

  describe('403 (spec 5.3: not an API key, lacks read, plan below Pro, ceiling reached)', () => {
    it('a browser-session JWT', async () => {
      assertRefused(await get({ authorization: `Bearer ${JWT}` }), 403, 'not_an_api_key');
      assert.deepEqual(keyServiceCalls, []);
    });

    it('a key without read', async () => {
      const scope = keyServiceAnswers(KEY, { key: { permissions: ['write', 'audit', 'content', 'READ'] } });
      assertRefused(await get({ authorization: `Bearer ${KEY}` }), 403, 'missing_permission');
      scope.done();
    });

    it('a plan below Pro', async () => {
      const scope = keyServiceAnswers(KEY, { organization: { plan: 'starter' } });
      assertRefused(await get({ authorization: `Bearer ${KEY}` }), 403, 'plan_not_eligible');
      scope.done();
    });

    it('the usage ceiling reached', async () => {
      const scope = keyServiceAnswers(KEY, { usage: { used: 100_000, ceiling: 100_000 } });
      assertRefused(await get({ authorization: `Bearer ${KEY}` }), 403, 'usage_ceiling_reached');
      scope.done();
    });
  });

  describe('503 when the key service cannot answer (fail closed)', () => {
    function assertUnavailable(answer: Answer, retryAfter: string): void {
      assert.equal(answer.status, 503, answer.text);
      assert.equal(answer.json.data, null);
      assert.equal(answer.json.errors[0]?.code, 'SERVICE_UNAVAILABLE');
      assert.equal(answer.json.errors[0]?.reason, 'key_service_unavailable');
      assert.equal(header(answer, 'retry-after'), retryAfter);
      assert.doesNotMatch(answer.text, /key-service\.test|status|atl_/);
      assert.deepEqual(limiterCalls, []);
    }

    it('unreachable', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      assertUnavailable(await get({ authorization: `Bearer ${KEY}` }), '5');
      scope.done();
    });

    it('timing out', async () => {
      const impatient = await serve(30);
      try {
        const scope = nock(KEY_SERVICE).post('/v1/keys/verify').delay(300).reply(200, verifyAnswer(KEY));
        assertUnavailable(await get({ authorization: `Bearer ${KEY}` }, PATH, impatient.server.url), '5');
        assert.deepEqual(keyServiceCalls, [{ call: 'verify', outcome: 'timeout' }]);
        scope.done();
      } finally {
        await impatient.authenticator.close();
        await impatient.server.close();
      }
    });

    it('answering 500', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(500, { error: 'internal' });
      assertUnavailable(await get({ authorization: `Bearer ${KEY}` }), '5');
      scope.done();
    });

    it('answering 429 or 503 with Retry-After, which is passed on', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .reply(429, '', { 'Retry-After': '7' })
        .post('/v1/keys/verify')
        .reply(503, '', { 'Retry-After': '12' });
      assertUnavailable(await get({ authorization: `Bearer ${KEY}` }), '7');
      assertUnavailable(await get({ authorization: `Bearer ${KEY}` }), '12');
      scope.done();
    });

    it('answering 401 to the gateway token (our misconfiguration, not the caller)', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(401);
      assertUnavailable(await get({ authorization: `Bearer ${KEY}` }), '5');
      scope.done();
    });
  });
});
