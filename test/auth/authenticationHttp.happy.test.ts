import assert from 'node:assert/strict';
import { KEY, useAuthenticatedApp } from './authenticatedAppHarness.js';

describe('authentication over HTTP: accepted keys', () => {
  const { get, keyServiceAnswers, limiterCalls, platformAnswersFor } = useAuthenticatedApp();

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
});
