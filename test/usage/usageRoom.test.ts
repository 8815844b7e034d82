import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { useServedApp } from '../support/callApi.js';
import { recordingUsage } from '../support/fakeServices.js';

/** A usage recorder whose backlog is full: the key service has taken nothing for a while. */
function fullUsage() {
  const usage = recordingUsage();
  return {
    ...usage,
    ensureRoom() {
      throw new ApiError('SERVICE_UNAVAILABLE', 'Usage cannot be counted right now. Retry later.', {
        reason: 'usage_backlog',
        headers: { 'Retry-After': '5' },
      });
    },
  };
}

describe('usage backlog full (the key service takes no usage)', () => {
  const usage = fullUsage();
  const app = useServedApp({ usage });

  it('refuses with 503 and Retry-After before asking the platform, counts nothing and says nothing cacheable', async () => {
    // No platform mock: a platform call would fail the test with a 502 instead.
    const answer = await app().call('/v1/api/keywords?site=example.com');
    assert.equal(answer.status, 503);
    assert.deepEqual(answer.body, {
      data: null,
      meta: { requestId: answer.headers.get('x-request-id') },
      errors: [
        {
          code: 'SERVICE_UNAVAILABLE',
          message: 'Usage cannot be counted right now. Retry later.',
          reason: 'usage_backlog',
        },
      ],
    });
    assert.ok(answer.headers.get('retry-after'));
    assert.equal(answer.headers.get('etag'), null);
    assert.equal(answer.headers.get('cache-control'), 'no-store');
    assert.equal(usage.events.length, 0);
  });
});
