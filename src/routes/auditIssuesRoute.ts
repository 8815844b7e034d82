import { LatestAuditDocument } from '../generated/graphql.js';
import { toAuditPayload } from '../mappers/auditMapper.js';
import { defineRoute } from './publicRoute.js';
import { requireSite } from './queryParams.js';
import { singleSite } from './singleSite.js';

export const auditIssuesRoute = defineRoute({
  path: '/v1/api/audit-issues',
  parse: (query) => ({ site: requireSite(query) }),
  async load({ platform, organizationId }, { site }) {
    const answer = await platform.request(LatestAuditDocument, { organizationId, site });
    const run = singleSite(answer.organization?.siteLookup).auditRuns.edges[0]?.node ?? null;
    return toAuditPayload(site, run);
  },
});
