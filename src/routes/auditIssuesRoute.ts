import { z } from 'zod';
import { LatestAuditDocument } from '../generated/graphql.js';
import { toAuditPayload } from '../mappers/auditMapper.js';
import { AuditPayload, AuditSetupRequired } from './payloadSchemas.js';
import { defineRoute } from './publicRoute.js';
import { siteParameter } from './queryRules.js';
import { singleSite } from './singleSite.js';

export const auditIssuesQuery = z.object({ site: siteParameter });

export const auditIssuesRoute = defineRoute({
  path: '/v1/api/audit-issues',
  operationId: 'getAuditIssues',
  summary: 'Latest completed audit: scores and issue counts',
  description:
    'Scores and issue counts of the newest completed audit (never individual issue rows). Without a completed ' +
    'audit the answer is 200 with `{ site, setup_required: true, reason: "no_audit" }`.',
  query: auditIssuesQuery,
  data: z.union([AuditPayload, AuditSetupRequired]),
  params: (query) => query,
  async load({ platform, organizationId }, { site }) {
    const answer = await platform.request(LatestAuditDocument, { organizationId, site });
    const run = singleSite(answer.organization).auditRuns.edges[0]?.node ?? null;
    return toAuditPayload(site, run);
  },
});
