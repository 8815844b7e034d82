import {
  AI_PROGRAM,
  aiVisibilityAnswer,
  COMPLETED_AUDIT_RUN,
  keywordConnection,
  keywordNodes,
  keywordsAnswer,
  latestAuditAnswer,
  NO_SITE,
  RANKINGS_SITE,
  rankingsAnswer,
} from '../fixtures/platformAnswers.js';

/**
 * Platform answers (the `data` of a GraphQL response) for each public route: a full
 * answer, the setup-required case where a route has one, and no matching site. Built
 * from the route tests' fixtures, which are typed by the generated query types, so the
 * conformance test cannot drift from queries/*.graphql.
 */

export interface RouteFixture {
  readonly path: string;
  readonly operation: string;
  readonly query: string;
  readonly success: unknown;
  readonly setupRequired?: unknown;
  readonly noSite: unknown;
}

const noSite = NO_SITE.data;

export const ROUTE_FIXTURES: readonly RouteFixture[] = [
  {
    path: '/v1/api/rankings',
    operation: 'Rankings',
    query: 'site=example.com&days=30&limit=5',
    success: rankingsAnswer(RANKINGS_SITE).data,
    noSite,
  },
  {
    path: '/v1/api/ai-visibility/summary',
    operation: 'AiVisibility',
    query: 'site=example.com',
    success: aiVisibilityAnswer(AI_PROGRAM).data,
    setupRequired: aiVisibilityAnswer(null).data,
    noSite,
  },
  {
    path: '/v1/api/keywords',
    operation: 'Keywords',
    query: 'site=example.com&limit=3',
    // Ranked and unranked rows, with and without a cluster or a volume: every nullable field both ways.
    success: keywordsAnswer(
      keywordConnection(
        [
          ...keywordNodes('ranked', 2, 1),
          ...keywordNodes('quiet', 1, 9).map((node) => ({ ...node, searchVolume: null })),
        ],
        null,
      ),
      keywordConnection([...keywordNodes('unranked', 1, 0), ...keywordNodes('unknown', 1, null)], null),
    ).data,
    noSite,
  },
  {
    path: '/v1/api/audit-issues',
    operation: 'LatestAudit',
    query: 'site=example.com',
    success: latestAuditAnswer([COMPLETED_AUDIT_RUN]).data,
    setupRequired: latestAuditAnswer([]).data,
    noSite,
  },
];
