import assert from 'node:assert/strict';
import nock from 'nock';
import { keyHashOf, testKey, verifyAnswer } from '../support/keys.js';
import { type Answer, JWT, KEY, KEY_SERVICE, OTHER_KEY, PATH, useAuthenticatedApp } from './authenticatedAppHarness.js';

describe('authentication over HTTP: revoked keys, ambiguous or exposed keys, session tokens', () => {
  const { assertRefused, get, getRaw, keyServiceCalls } = useAuthenticatedApp();

  describe('401 (spec 5.3: missing, malformed, unknown, expired, revoked)', () => {
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
      const withoutRequestId = (answer: Answer) => ({
        status: answer.status,
        errors: answer.json.errors,
        data: answer.json.data,
      });
      assert.deepEqual(withoutRequestId(revoked), withoutRequestId(unknown));
      assert.deepEqual(withoutRequestId(revokedAgain), withoutRequestId(unknown));
      scope.done();
    });

    it('both headers with different keys', async () => {
      assertRefused(
        await get({ authorization: `Bearer ${KEY}`, 'x-api-key': OTHER_KEY }),
        401,
        'conflicting_credentials',
      );
      assert.deepEqual(keyServiceCalls, []);
    });

    it('repeated X-API-Key or Authorization lines with different keys', async () => {
      assertRefused(await getRaw({ 'x-api-key': [KEY, OTHER_KEY] }), 401, 'conflicting_credentials');
      assertRefused(
        await getRaw({ authorization: [`Bearer ${KEY}`, `Bearer ${OTHER_KEY}`] as unknown as string }),
        401,
        'conflicting_credentials',
      );
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
  });

  describe('403 (spec 5.3: not an API key, lacks read, plan below Pro, ceiling reached)', () => {
    it('a browser-session JWT', async () => {
      assertRefused(await get({ authorization: `Bearer ${JWT}` }), 403, 'not_an_api_key');
      assert.deepEqual(keyServiceCalls, []);
    });
  });
});
