import { KeywordsDocument, KeywordsPageDocument, type TrackedKeywordOrder } from '../generated/graphql.js';
import type { TrackedKeywordNode } from '../mappers/keywordsMapper.js';
import type { PlatformClient } from '../platform/platformClient.js';
import { singleSite } from './singleSite.js';

/** The platform refuses pages larger than this (BAD_USER_INPUT). */
export const PLATFORM_PAGE_MAX = 200;

interface Page {
  edges: ReadonlyArray<{ node: TrackedKeywordNode }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

const RANKED_ORDER: TrackedKeywordOrder = { field: 'POSITION', direction: 'ASC' };
const UNRANKED_ORDER: TrackedKeywordOrder = { field: 'KEYWORD', direction: 'ASC' };

/**
 * The first `limit` keywords of a site in public order: ranked ones best first, then
 * unranked ones by text. One call fetches the first page of each kind; further pages
 * are fetched only while the answer still needs rows, at most 200 at a time.
 */
export async function fetchTrackedKeywords(
  platform: PlatformClient,
  organizationId: string,
  site: string,
  limit: number,
): Promise<TrackedKeywordNode[]> {
  const firstPage = Math.min(limit, PLATFORM_PAGE_MAX);
  const answer = await platform.request(KeywordsDocument, {
    organizationId,
    site,
    rankedFirst: firstPage,
    unrankedFirst: firstPage,
  });
  const match = singleSite(answer.organization);

  /** The first page given, then further pages of the same kind while fewer than `wanted` rows are in. */
  const collect = async (first: Page, ranked: boolean, wanted: number): Promise<TrackedKeywordNode[]> => {
    const nodes = first.edges.map((edge) => edge.node);
    let pageInfo = first.pageInfo;
    // Bounded: each page adds rows, and no answer needs more than `wanted` of them.
    const maxPages = Math.ceil(wanted / PLATFORM_PAGE_MAX) + 1;
    for (let page = 0; page < maxPages && nodes.length < wanted && pageInfo.hasNextPage && pageInfo.endCursor; page++) {
      const next = await platform.request(KeywordsPageDocument, {
        organizationId,
        siteId: match.id,
        first: Math.min(wanted - nodes.length, PLATFORM_PAGE_MAX),
        after: pageInfo.endCursor,
        ranked,
        orderBy: ranked ? RANKED_ORDER : UNRANKED_ORDER,
      });
      const connection = next.organization?.site?.trackedKeywords;
      if (!connection || connection.edges.length === 0) break;
      nodes.push(...connection.edges.map((edge) => edge.node));
      pageInfo = connection.pageInfo;
    }
    return nodes.slice(0, wanted);
  };

  const ranked = await collect(match.ranked, true, limit);
  if (ranked.length >= limit) return ranked.slice(0, limit);
  return [...ranked, ...(await collect(match.unranked, false, limit - ranked.length))];
}
