import { toKeywords, toKeywordsPayload } from '../mappers/keywordsMapper.js';
import { fetchTrackedKeywords } from './trackedKeywordPages.js';
import { defineRoute } from './publicRoute.js';
import { positiveIntOrDefault, requireSite } from './queryParams.js';

export const keywordsRoute = defineRoute({
  path: '/v1/api/keywords',
  parse: (query) => ({ site: requireSite(query), limit: positiveIntOrDefault(query.limit, 50, 500) }),
  async load({ platform, organizationId }, { site, limit }) {
    const nodes = await fetchTrackedKeywords(platform, organizationId, site, limit);
    return toKeywordsPayload(site, toKeywords(nodes, limit));
  },
});
