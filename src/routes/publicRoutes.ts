import { z } from 'zod';
import { ApiError } from '../errors.js';
import {
  AiVisibilityDocument,
  KeywordsDocument,
  KeywordsPageDocument,
  LatestAuditDocument,
  RankingsDocument,
} from '../generated/graphql.js';
import { toAiVisibilityPayload } from '../mappers/aiVisibilityMapper.js';
import { toAuditPayload } from '../mappers/auditMapper.js';
import { type TrackedKeywordNode, type TrackedKeywordPage, toKeywords } from '../mappers/keywordsMapper.js';
import { toMovers } from '../mappers/rankingsMapper.js';
import {
  AiVisibilityPayload,
  AiVisibilitySetupRequired,
  AuditPayload,
  AuditSetupRequired,
  keywordsPayload,
  rankingsPayload,
} from './payloadSchemas.js';
import { defineRoute, type PublicRoute } from './publicRoute.js';
import { lenientPositiveInt, siteParameter } from './queryRules.js';

const DAY_MS = 86_400_000;
const RANKINGS_MAX_DAYS = 90;
const RANKINGS_MAX_LIMIT = 100;
const KEYWORDS_MAX_LIMIT = 500;
/** The platform refuses pages larger than this (BAD_USER_INPUT). */
const PLATFORM_PAGE_MAX = 200;

export const rankingsQuery = z.object({
  site: siteParameter,
  days: lenientPositiveInt(7, RANKINGS_MAX_DAYS, 'The trailing window in days.'),
  limit: lenientPositiveInt(10, RANKINGS_MAX_LIMIT, 'How many movers to list at most.'),
});
export const aiVisibilityQuery = z.object({ site: siteParameter });
export const keywordsQuery = z.object({
  site: siteParameter,
  limit: lenientPositiveInt(50, KEYWORDS_MAX_LIMIT, 'How many keywords to list at most.'),
});
export const auditIssuesQuery = z.object({ site: siteParameter });

const rankingsRoute = defineRoute({
  path: '/v1/api/rankings',
  operationId: 'getRankings',
  summary: 'Keywords whose rankings moved most',
  description:
    'Compares the newest rank check with the newest one on or before `days` days ago (UTC) and lists the ' +
    'keywords whose position changed, largest move first.',
  query: rankingsQuery,
  data: rankingsPayload(RANKINGS_MAX_DAYS, RANKINGS_MAX_LIMIT),
  params({ site, days, limit }, now) {
    // The window's start date is part of the cache key, so an answer never outlives the day it was computed for.
    const startDate = new Date(now.getTime() - days * DAY_MS).toISOString().slice(0, 10);
    return { site, days, limit, startDate };
  },
  async load({ platform, organizationId }, { site, days, limit, startDate }) {
    const answer = await platform.request(RankingsDocument, { organizationId, site, startDate });
    const match = singleSite(answer.organization);
    return { site, days, movers: toMovers(match.latest, match.start, limit) };
  },
});

const aiVisibilityRoute = defineRoute({
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

const keywordsRoute = defineRoute({
  path: '/v1/api/keywords',
  operationId: 'getKeywords',
  summary: 'Tracked keywords, best ranked first',
  description: 'Tracked keywords by newest position (ties by keyword text), then unranked keywords by text.',
  query: keywordsQuery,
  data: keywordsPayload(KEYWORDS_MAX_LIMIT),
  params: (query) => query,
  // One call fetches the first page of each kind (ranked, unranked); further pages only while rows are missing.
  async load({ platform, organizationId }, { site, limit }) {
    const firstPage = Math.min(limit, PLATFORM_PAGE_MAX);
    const variables = { organizationId, site, rankedFirst: firstPage, unrankedFirst: firstPage };
    const match = singleSite((await platform.request(KeywordsDocument, variables)).organization);

    const collect = async (
      first: TrackedKeywordPage,
      ranked: boolean,
      wanted: number,
    ): Promise<TrackedKeywordNode[]> => {
      const nodes = first.edges.map((edge) => edge.node);
      let pageInfo = first.pageInfo;
      // Bounded: each page adds rows, and no answer needs more than `wanted` of them.
      const maxPages = Math.ceil(wanted / PLATFORM_PAGE_MAX) + 1;
      for (
        let page = 0;
        page < maxPages && nodes.length < wanted && pageInfo.hasNextPage && pageInfo.endCursor;
        page++
      ) {
        const next = await platform.request(KeywordsPageDocument, {
          organizationId,
          siteId: match.id,
          first: Math.min(wanted - nodes.length, PLATFORM_PAGE_MAX),
          after: pageInfo.endCursor,
          ranked,
          orderBy: { field: ranked ? 'POSITION' : 'KEYWORD', direction: 'ASC' },
        });
        const connection = next.organization?.site?.trackedKeywords;
        if (!connection || connection.edges.length === 0) break;
        nodes.push(...connection.edges.map((edge) => edge.node));
        pageInfo = connection.pageInfo;
      }
      return nodes.slice(0, wanted);
    };

    const ranked = await collect(match.ranked, true, limit);
    const unranked = ranked.length >= limit ? [] : await collect(match.unranked, false, limit - ranked.length);
    return { site, keywords: toKeywords([...ranked, ...unranked], limit) };
  },
});

const auditIssuesRoute = defineRoute({
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
    return toAuditPayload(site, singleSite(answer.organization).auditRuns.edges[0]?.node ?? null);
  },
});

/** The public v1 routes: the app serves these, and the OpenAPI document describes these. */
export const PUBLIC_ROUTES: readonly PublicRoute[] = [
  rankingsRoute,
  aiVisibilityRoute,
  keywordsRoute,
  auditIssuesRoute,
];

/**
 * The one site `siteLookup` (domain or slug; slugs are not unique) matched: none is 404, as is another organization's
 * site; several ask for the exact domain. A missing field is the platform breaking its schema (→ 502), never a 404.
 */
export function singleSite<S>(organization: { readonly siteLookup: readonly S[] } | null | undefined): S {
  if (organization === undefined) throw new TypeError('answer has no organization field');
  const matches = organization === null ? [] : organization.siteLookup;
  if (!Array.isArray(matches)) throw new TypeError('siteLookup is not a list');
  if (matches.length === 0) {
    throw new ApiError('NOT_FOUND', 'No site matches `site` in your organization.', { reason: 'site_not_found' });
  }
  if (matches.length > 1) {
    throw new ApiError('BAD_REQUEST', 'More than one site matches `site`; retry with the exact domain.', {
      reason: 'site_ambiguous',
    });
  }
  return matches[0] as S;
}
