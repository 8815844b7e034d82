import assert from 'node:assert/strict';
import { toAiVisibilityPayload } from '../../src/mappers/aiVisibilityMapper.js';
import { PROGRAM_WITH_ROLLUP, PROGRAM_WITHOUT_ROLLUP } from '../fixtures/aiVisibilityPrograms.js';

describe('AI visibility mapper', () => {
  it('reports the newest rollup, the prompt counts and computedAt in UTC', () => {
    assert.deepEqual(toAiVisibilityPayload('example.com', PROGRAM_WITH_ROLLUP), {
      site: 'example.com',
      ai_visibility: {
        score: 0.4321,
        activePrompts: 42,
        pausedPrompts: 3,
        summary: { appearanceRate: 0.375, shareOfVoice: 0.125, computedAt: '2026-11-20T13:05:00.000Z' },
      },
    });
  });

  it('makes score exactly scoreBps / 10000, with no rounding', () => {
    for (const [scoreBps, score, written] of [
      [4321, 0.4321, '0.4321'],
      [1, 0.0001, '0.0001'],
      [3333, 0.3333, '0.3333'],
      [10000, 1, '1'],
      [0, 0, '0'],
      [5, 0.0005, '0.0005'],
      [9999, 0.9999, '0.9999'],
    ] as const) {
      const program = { ...PROGRAM_WITH_ROLLUP, rollups: [{ ...PROGRAM_WITH_ROLLUP.rollups[0]!, scoreBps }] };
      const payload = toAiVisibilityPayload('s', program);
      assert.ok('ai_visibility' in payload);
      assert.equal(payload.ai_visibility.score, score);
      assert.equal(payload.ai_visibility.score, scoreBps / 10000);
      assert.ok(JSON.stringify(payload).includes(`"score":${written},`), `${scoreBps} bps is written ${written}`);
    }
  });

  it('with no 30-day rollup yet, gives score and the three summary fields null in the same shape', () => {
    const withRollup = toAiVisibilityPayload('example.com', PROGRAM_WITH_ROLLUP);
    const withoutRollup = toAiVisibilityPayload('example.com', PROGRAM_WITHOUT_ROLLUP);
    assert.deepEqual(withoutRollup, {
      site: 'example.com',
      ai_visibility: {
        score: null,
        activePrompts: 5,
        pausedPrompts: 0,
        summary: { appearanceRate: null, shareOfVoice: null, computedAt: null },
      },
    });
    assert.deepEqual(keyPaths(withoutRollup), keyPaths(withRollup));
  });

  it('with no program, answers exactly { site, setup_required: true, reason: "no_ai_visibility" }', () => {
    const payload = toAiVisibilityPayload('example', null);
    assert.deepEqual(payload, { site: 'example', setup_required: true, reason: 'no_ai_visibility' });
    assert.deepEqual(Object.keys(payload), ['site', 'setup_required', 'reason']);
  });

  it('writes exactly the fields the spec lists', () => {
    assert.deepEqual(keyPaths(toAiVisibilityPayload('s', PROGRAM_WITH_ROLLUP)), [
      'ai_visibility',
      'ai_visibility.activePrompts',
      'ai_visibility.pausedPrompts',
      'ai_visibility.score',
      'ai_visibility.summary',
      'ai_visibility.summary.appearanceRate',
      'ai_visibility.summary.computedAt',
      'ai_visibility.summary.shareOfVoice',
      'site',
    ]);
  });
});

/** Every key path of a JSON object, sorted: two values with equal paths have the same shape. */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return [];
  return Object.entries(value)
    .flatMap(([key, inner]) => [`${prefix}${key}`, ...keyPaths(inner, `${prefix}${key}.`)])
    .sort();
}
