import assert from 'node:assert/strict';
import { toAuditPayload } from '../../src/mappers/auditMapper.js';
import { COMPLETED_RUN, RUN_WITH_NULL_SCORES } from '../fixtures/auditRuns.js';

describe('audit mapper', () => {
  it('reports the run id, completedAt in UTC, the scores and the issue counts', () => {
    assert.deepEqual(toAuditPayload('example.com', COMPLETED_RUN), {
      site: 'example.com',
      audit: {
        latestRun: {
          id: '3f1c2b8e-5a4d-4e7f-9b21-6c0d8e9fa123',
          completedAt: '2026-11-19T23:30:00.000Z',
          scores: { overall: 81.5, aiCrawl: 90, decay: 62.25, technical: 77 },
        },
        issueCounts: { critical: 0, warn: 12, info: 40 },
      },
    });
  });

  it('takes decay from contentDecay', () => {
    const payload = toAuditPayload('s', {
      ...COMPLETED_RUN,
      scores: { overall: 1, aiCrawl: 2, contentDecay: 33.5, technical: 4 },
    });
    assert.ok('audit' in payload);
    assert.equal(payload.audit.latestRun.scores.decay, 33.5);
    assert.ok(!('contentDecay' in payload.audit.latestRun.scores));
  });

  it('counts WARNING as warn, CRITICAL as critical, INFO as info', () => {
    const payload = toAuditPayload('s', {
      ...COMPLETED_RUN,
      issueSummary: [
        { severity: 'INFO', count: 1 },
        { severity: 'CRITICAL', count: 7 },
        { severity: 'WARNING', count: 3 },
      ],
    });
    assert.ok('audit' in payload);
    assert.deepEqual(payload.audit.issueCounts, { critical: 7, warn: 3, info: 1 });
  });

  it('counts a severity with no row as 0', () => {
    for (const [summary, counts] of [
      [[], { critical: 0, warn: 0, info: 0 }],
      [[{ severity: 'CRITICAL', count: 2 }], { critical: 2, warn: 0, info: 0 }],
      [[{ severity: 'INFO', count: 5 }], { critical: 0, warn: 0, info: 5 }],
    ] as const) {
      const payload = toAuditPayload('s', { ...COMPLETED_RUN, issueSummary: [...summary] });
      assert.ok('audit' in payload);
      assert.deepEqual(payload.audit.issueCounts, counts);
    }
  });

  it('converts completedAt with any offset to UTC ending in Z', () => {
    for (const [given, utc] of [
      ['2026-11-20T14:05:00+01:00', '2026-11-20T13:05:00.000Z'],
      ['2026-11-20T00:30:00+01:00', '2026-11-19T23:30:00.000Z'],
      ['2026-11-19T23:59:59.5-05:30', '2026-11-20T05:29:59.500Z'],
      ['2026-11-20T14:05:00Z', '2026-11-20T14:05:00.000Z'],
    ]) {
      const payload = toAuditPayload('s', { ...COMPLETED_RUN, completedAt: given! });
      assert.ok('audit' in payload);
      assert.equal(payload.audit.latestRun.completedAt, utc);
    }
  });

  it('keeps a score that did not run as null, and all four null when the run has no scores', () => {
    const partial = toAuditPayload('s', RUN_WITH_NULL_SCORES);
    assert.ok('audit' in partial);
    assert.deepEqual(partial.audit.latestRun.scores, { overall: null, aiCrawl: 55, decay: null, technical: null });
    assert.equal(partial.audit.latestRun.completedAt, '2026-11-20T05:29:59.500Z');
    const none = toAuditPayload('s', { ...RUN_WITH_NULL_SCORES, scores: null });
    assert.ok('audit' in none);
    assert.deepEqual(none.audit.latestRun.scores, { overall: null, aiCrawl: null, decay: null, technical: null });
  });

  it('keeps a score of 0 as 0', () => {
    const payload = toAuditPayload('s', {
      ...COMPLETED_RUN,
      scores: { overall: 0, aiCrawl: 0, contentDecay: 0, technical: 0 },
    });
    assert.ok('audit' in payload);
    assert.deepEqual(payload.audit.latestRun.scores, { overall: 0, aiCrawl: 0, decay: 0, technical: 0 });
  });

  it('with no completed run, answers exactly { site, setup_required: true, reason: "no_audit" }', () => {
    const payload = toAuditPayload('example', null);
    assert.deepEqual(payload, { site: 'example', setup_required: true, reason: 'no_audit' });
    assert.deepEqual(Object.keys(payload), ['site', 'setup_required', 'reason']);
  });

  it('refuses a completed run without completedAt (the platform broke its word)', () => {
    assert.throws(() => toAuditPayload('s', { ...COMPLETED_RUN, completedAt: null }), TypeError);
  });

  it('writes exactly the fields the spec lists and never issue rows', () => {
    const payload = toAuditPayload('s', COMPLETED_RUN);
    assert.ok('audit' in payload);
    assert.deepEqual(Object.keys(payload), ['site', 'audit']);
    assert.deepEqual(Object.keys(payload.audit), ['latestRun', 'issueCounts']);
    assert.deepEqual(Object.keys(payload.audit.latestRun), ['id', 'completedAt', 'scores']);
    assert.deepEqual(Object.keys(payload.audit.latestRun.scores), ['overall', 'aiCrawl', 'decay', 'technical']);
    assert.deepEqual(Object.keys(payload.audit.issueCounts), ['critical', 'warn', 'info']);
  });
});
