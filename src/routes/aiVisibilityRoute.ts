import { z } from 'zod';
import { AiVisibilityDocument } from '../generated/graphql.js';
import { toAiVisibilityPayload } from '../mappers/aiVisibilityMapper.js';
import { AiVisibilityPayload, AiVisibilitySetupRequired } from './payloadSchemas.js';
import { defineRoute } from './publicRoute.js';
import { siteParameter } from './queryRules.js';
import { singleSite } from './singleSite.js';

export const aiVisibilityQuery = z.object({ site: siteParameter });

export const aiVisibilityRoute = defineRoute({
  path: '/v1/api/ai-visibility/summary',
  operationId: 'getAiVisibilitySummary',
  summary: 'AI visibility summary',
  description:
    'The newest 30-day AI visibility rollup and tracked-prompt counts. A site without an AI visibility program ' +
    'answers 200 with `{ site, setup_required: true, reason: "no_ai_visibility" }`.',
  query: aiVisibilityQuery,
  data: z.union([AiVisibilityPayload, AiVisibilitySetupRequired]),
  params: (query) => query,
  async load({ platform, organizationId }, { site }) {
    const answer = await platform.request(AiVisibilityDocument, { organizationId, site });
    return toAiVisibilityPayload(site, singleSite(answer.organization).aiVisibility);
  },
});
