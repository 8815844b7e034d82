import { z } from 'zod';
import { toKeywords } from '../mappers/keywordsMapper.js';
import { keywordsPayload } from './payloadSchemas.js';
import { defineRoute } from './publicRoute.js';
import { lenientPositiveInt, siteParameter } from './queryRules.js';
import { fetchTrackedKeywords } from './trackedKeywordPages.js';

const MAX_LIMIT = 500;

export const keywordsQuery = z.object({
  site: siteParameter,
  limit: lenientPositiveInt(50, MAX_LIMIT, 'How many keywords to list at most.'),
});

export const keywordsRoute = defineRoute({
  path: '/v1/api/keywords',
  operationId: 'getKeywords',
  summary: 'Tracked keywords, best ranked first',
  description: 'Tracked keywords by newest position (ties by keyword text), then unranked keywords by text.',
  query: keywordsQuery,
  data: keywordsPayload(MAX_LIMIT),
  params: (query) => query,
  async load({ platform, organizationId }, { site, limit }) {
    const nodes = await fetchTrackedKeywords(platform, organizationId, site, limit);
    return { site, keywords: toKeywords(nodes, limit) };
  },
});
