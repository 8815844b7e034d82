import assert from 'node:assert/strict';
import nock from 'nock';
import { FIXED_NOW } from '../support/fakeServices.js';
import { keyHashOf, verifyAnswer, withBadChecksum } from '../support/keys.js';
import { type Answer, KEY, KEY_SERVICE, OTHER_KEY, PATH, useAuthenticatedApp } from './authenticatedAppHarness.js';

describe('authentication over HTTP: refusals and an unavailable key service', () => {
  const { assertRefused, get, header, keyServiceAnswers, keyServiceCalls, limiterCalls, serve } = useAuthenticatedApp();

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
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify', { keyHash: keyHashOf(OTHER_KEY) })
        .reply(404, { error: 'unknown_key' });
      assertRefused(await get({ authorization: `Bearer ${OTHER_KEY}` }), 401, 'invalid_key');
      scope.done();
    });

    it('expired key (expiresAt ≤ now), with a reason saying so', async () => {
      const scope = keyServiceAnswers(KEY, { key: { expiresAt: FIXED_NOW.toISOString() } });
      assertRefused(await get({ authorization: `Bearer ${KEY}` }), 401, 'expired_key');
      scope.done();
    });

    it('another authorization scheme', async () => {
      assertRefused(
        await get({ authorization: `Basic ${Buffer.from(`u:${KEY}`).toString('base64')}` }),
        401,
        'unsupported_scheme',
      );
    });
  });

  describe('403 (spec 5.3: not an API key, lacks read, plan below Pro, ceiling reached)', () => {
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
