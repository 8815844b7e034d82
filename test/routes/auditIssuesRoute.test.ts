import assert from 'node:assert/strict';
import { Kind, parse, visit } from 'graphql';
import { COMPLETED_AUDIT_RUN, latestAuditAnswer } from '../fixtures/platformAnswers.js';
import { useServedApp } from '../support/callApi.js';
import { PLATFORM_TOKEN } from '../support/fakeServices.js';
import { assertEveryCallScoped, mockPlatform } from '../support/platformMock.js';

describe('GET /v1/api/audit-issues', () => {
  const served = useServedApp();

  it('answers the newest completed run in the exact success envelope', async () => {
    const { scope, posted } = mockPlatform({ body: latestAuditAnswer([COMPLETED_AUDIT_RUN]) });
    const answer = await served().call('/v1/api/audit-issues?site=shoes.example');
    scope.done();
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      data: {
        site: 'shoes.example',
        audit: {
          latestRun: {
            id: 'b6a4f0de-1d2c-4c8e-9a57-2f3e4d5c6b7a',
            completedAt: '2026-11-21T07:00:00.000Z',
            scores: { overall: 74, aiCrawl: null, decay: 58.5, technical: 91 },
          },
          issueCounts: { critical: 2, warn: 9, info: 0 },
        },
      },
      meta: {},
      errors: [],
    });
    assert.equal(posted[0]?.operationName, 'LatestAudit');
    assert.deepEqual(posted[0]?.variables, { organizationId: 'org_a', site: 'shoes.example' });
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('asks the platform only for the newest COMPLETED run, and never for issue rows', async () => {
    const { scope, posted } = mockPlatform({ body: latestAuditAnswer([COMPLETED_AUDIT_RUN]) });
    await served().call('/v1/api/audit-issues?site=shoes.example');
    scope.done();
    const fields: string[] = [];
    let auditRunsArguments: Record<string, string> = {};
    visit(parse(posted[0]?.query ?? ''), {
      Field(node) {
        fields.push(node.name.value);
        if (node.name.value === 'auditRuns') {
          auditRunsArguments = Object.fromEntries(
            (node.arguments ?? []).map((a) => [
              a.name.value,
              a.value.kind === Kind.ENUM || a.value.kind === Kind.INT ? a.value.value : '?',
            ]),
          );
        }
      },
    });
    assert.deepEqual(auditRunsArguments, { status: 'COMPLETED', first: '1' });
    assert.ok(!fields.includes('issues'), 'individual issue rows are never selected');
    assert.ok(fields.includes('issueSummary'));
  });

  it('answers 200 with exactly the setup-required data when no run has completed', async () => {
    const { scope } = mockPlatform({ body: latestAuditAnswer([]) });
    const answer = await served().call('/v1/api/audit-issues?site=shoes');
    scope.done();
    assert.equal(answer.status, 200);
    assert.equal(
      answer.text,
      '{"data":{"site":"shoes","setup_required":true,"reason":"no_audit"},"meta":{},"errors":[]}',
    );
  });

  it('answers 502 when the platform calls a run completed but gives no completedAt', async () => {
    const { scope } = mockPlatform({ body: latestAuditAnswer([{ ...COMPLETED_AUDIT_RUN, completedAt: null }]) });
    const answer = await served().call('/v1/api/audit-issues?site=shoes');
    scope.done();
    assert.equal(answer.status, 502);
    assert.equal((answer.body as { errors: Array<{ code: string }> }).errors[0]?.code, 'UPSTREAM_ERROR');
  });
});
