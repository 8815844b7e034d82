import { AiVisibilityDocument } from '../generated/graphql.js';
import { toAiVisibilityPayload } from '../mappers/aiVisibilityMapper.js';
import { defineRoute } from './publicRoute.js';
import { requireSite } from './queryParams.js';
import { singleSite } from './singleSite.js';

export const aiVisibilityRoute = defineRoute({
  path: '/v1/api/ai-visibility/summary',
  parse: (query) => ({ site: requireSite(query) }),
  async load({ platform, organizationId }, { site }) {
    const answer = await platform.request(AiVisibilityDocument, { organizationId, site });
    return toAiVisibilityPayload(site, singleSite(answer.organization?.siteLookup).aiVisibility);
  },
});
