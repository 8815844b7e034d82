import assert from 'node:assert/strict';
import {
  AI_PROGRAM,
  aiVisibilityAnswer,
  COMPLETED_AUDIT_RUN,
  keywordConnection,
  keywordNodes,
  keywordsAnswer,
  keywordsPageAnswer,
  latestAuditAnswer,
  RANKINGS_SITE,
  rankingsAnswer,
} from '../fixtures/platformAnswers.js';
import { useServedApp } from '../support/callApi.js';
import { mockPlatform, type PlatformReply, type PostedOperation } from '../support/platformMock.js';

/** A site value no query text could hold by chance, with GraphQL-significant characters in it. */
const SITE = 'zq-distinctive-site-7781") { __typename } #.example';

const CASES: Array<{ path: string; replies: PlatformReply[] }> = [
  { path: '/v1/api/rankings', replies: [{ body: rankingsAnswer(RANKINGS_SITE) }] },
  { path: '/v1/api/ai-visibility/summary', replies: [{ body: aiVisibilityAnswer(AI_PROGRAM) }] },
  { path: '/v1/api/audit-issues', replies: [{ body: latestAuditAnswer([COMPLETED_AUDIT_RUN]) }] },
  {
    path: '/v1/api/keywords',
    replies: [
      { body: keywordsAnswer(keywordConnection(keywordNodes('r', 200, 1), 'r1'), keywordConnection([], 'u1')) },
      { body: keywordsPageAnswer(keywordConnection(keywordNodes('r', 10, 1, 200), null)) },
      { body: keywordsPageAnswer(keywordConnection(keywordNodes('u', 5, null), null)) },
    ],
  },
];

describe('user input reaches GraphQL only as variables', () => {
  const served = useServedApp();

  for (const { path, replies } of CASES) {
    it(`${path}: no query text sent to the platform contains the site value`, async () => {
      const { scope, posted } = mockPlatform(...replies);
      const answer = await served().call(`${path}?site=${encodeURIComponent(`  ${SITE} `)}&limit=300&days=30`);
      scope.done();
      assert.equal(answer.status, 200);
      assert.equal((answer.body as { data: { site: string } }).data.site, SITE);
      assert.equal(posted.length, replies.length);
      for (const operation of posted) assertSiteNotInText(operation);
      assert.equal(posted[0]?.variables.site, SITE, 'the site travels as a variable');
    });
  }
});

function assertSiteNotInText(operation: PostedOperation): void {
  for (const fragment of [SITE, 'zq-distinctive-site-7781', 'distinctive']) {
    assert.ok(!operation.query.includes(fragment), `${operation.operationName} query text holds "${fragment}"`);
    assert.ok(!(operation.operationName ?? '').includes(fragment));
  }
}
