import assert from 'node:assert/strict';
import { AI_PROGRAM, aiVisibilityAnswer } from '../fixtures/platformAnswers.js';
import { useServedApp } from '../support/callApi.js';
import { PLATFORM_TOKEN } from '../support/fakeServices.js';
import { assertEveryCallScoped, mockPlatform } from '../support/platformMock.js';

describe('GET /v1/api/ai-visibility/summary', () => {
  const served = useServedApp();

  it('answers the newest 30-day rollup and prompt counts in the exact success envelope', async () => {
    const { scope, posted } = mockPlatform({ body: aiVisibilityAnswer(AI_PROGRAM) });
    const answer = await served().call('/v1/api/ai-visibility/summary?site=shoes');
    scope.done();
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      data: {
        site: 'shoes',
        ai_visibility: {
          score: 0.618,
          activePrompts: 24,
          pausedPrompts: 6,
          summary: { appearanceRate: 0.42, shareOfVoice: 0.17, computedAt: '2026-11-21T01:15:00.000Z' },
        },
      },
      meta: {},
      errors: [],
    });
    assert.equal(posted[0]?.operationName, 'AiVisibility');
    assert.deepEqual(posted[0]?.variables, { organizationId: 'org_a', site: 'shoes' });
    assert.match(posted[0]?.query ?? '', /rollups\(window: DAYS_30, first: 1\)/);
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('answers nulls in the same shape while no 30-day rollup exists', async () => {
    const { scope } = mockPlatform({ body: aiVisibilityAnswer({ ...AI_PROGRAM, rollups: [] }) });
    const answer = await served().call('/v1/api/ai-visibility/summary?site=shoes');
    scope.done();
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      data: {
        site: 'shoes',
        ai_visibility: {
          score: null,
          activePrompts: 24,
          pausedPrompts: 6,
          summary: { appearanceRate: null, shareOfVoice: null, computedAt: null },
        },
      },
      meta: {},
      errors: [],
    });
  });

  it('answers 200 with exactly the setup-required data when the site has no program', async () => {
    const { scope } = mockPlatform({ body: aiVisibilityAnswer(null) });
    const answer = await served().call('/v1/api/ai-visibility/summary?site=shoes.example');
    scope.done();
    assert.equal(answer.status, 200);
    assert.equal(
      answer.text,
      '{"data":{"site":"shoes.example","setup_required":true,"reason":"no_ai_visibility"},"meta":{},"errors":[]}',
    );
  });
});
