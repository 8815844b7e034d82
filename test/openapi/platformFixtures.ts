/**
 * Platform answers (the `data` of a GraphQL response) for each public route, in the
 * shapes of queries/*.graphql: a full answer, the setup-required case where a route
 * has one, and no matching site.
 */

const site = (fields: Record<string, unknown>) => ({ organization: { siteLookup: [{ id: 'site_1', ...fields }] } });
const noSite = { organization: { siteLookup: [] } };

const keywordNode = (keyword: string, position: number | null, searchVolume: number | null, label: string | null) => ({
  keyword,
  position,
  searchVolume,
  cluster: label === null ? null : { label },
});

export interface RouteFixture {
  readonly path: string;
  readonly operation: string;
  readonly query: string;
  readonly success: unknown;
  readonly setupRequired?: unknown;
  readonly noSite: unknown;
}

export const ROUTE_FIXTURES: readonly RouteFixture[] = [
  {
    path: '/v1/api/rankings',
    operation: 'Rankings',
    query: 'site=example.com&days=30&limit=5',
    success: site({
      latest: {
        date: '2026-11-20',
        entries: [
          { keywordId: 'k1', keyword: 'seo audit', position: 3 },
          { keywordId: 'k2', keyword: 'rank tracker', position: 0 },
          { keywordId: 'k3', keyword: 'new keyword', position: 12 },
        ],
      },
      start: {
        date: '2026-10-21',
        entries: [
          { keywordId: 'k1', position: 9 },
          { keywordId: 'k2', position: 40 },
        ],
      },
    }),
    noSite,
  },
  {
    path: '/v1/api/ai-visibility/summary',
    operation: 'AiVisibility',
    query: 'site=example.com',
    success: site({
      aiVisibility: {
        promptCounts: { active: 12, paused: 3 },
        rollups: [{ scoreBps: 4275, appearanceRate: 0.5, shareOfVoice: 0.25, computedAt: '2026-11-20T14:05:00+02:00' }],
      },
    }),
    setupRequired: site({ aiVisibility: null }),
    noSite,
  },
  {
    path: '/v1/api/keywords',
    operation: 'Keywords',
    query: 'site=example.com&limit=3',
    success: site({
      ranked: {
        totalCount: 2,
        edges: [{ node: keywordNode('seo', 1, 1000, 'core') }, { node: keywordNode('audit', 7, null, null) }],
        pageInfo: { hasNextPage: false, endCursor: null },
      },
      unranked: {
        edges: [{ node: keywordNode('zebra', 0, 10, 'misc') }],
        pageInfo: { hasNextPage: false, endCursor: null },
      },
    }),
    noSite,
  },
  {
    path: '/v1/api/audit-issues',
    operation: 'LatestAudit',
    query: 'site=example.com',
    success: site({
      auditRuns: {
        edges: [
          {
            node: {
              id: '0b6f4a52-5d1e-4c57-9a43-5f2f8d0c1e77',
              completedAt: '2026-11-19T08:00:00Z',
              scores: { overall: 81.5, aiCrawl: null, contentDecay: 12, technical: 90 },
              issueSummary: [
                { severity: 'CRITICAL', count: 2 },
                { severity: 'WARNING', count: 5 },
              ],
            },
          },
        ],
      },
    }),
    setupRequired: site({ auditRuns: { edges: [] } }),
    noSite,
  },
];
