import type { KeywordsQuery } from '../generated/graphql.js';
import type { PublicKeyword } from '../routes/payloadSchemas.js';
import { compareCodePoints } from './codePointOrder.js';
import { toPublicPosition } from './rankingsMapper.js';

/** One page of tracked keywords of a site, as the platform answers it. */
export type TrackedKeywordPage = NonNullable<KeywordsQuery['organization']>['siteLookup'][number]['ranked'];
export type TrackedKeywordNode = TrackedKeywordPage['edges'][number]['node'];

/** Best position first (ties by text, code point order), then unranked keywords by text. */
export function toKeywords(nodes: readonly TrackedKeywordNode[], limit: number): PublicKeyword[] {
  const keywords = nodes.map((node): PublicKeyword => {
    const position = toPublicPosition(node.position);
    return {
      keyword: node.keyword,
      position,
      unranked: position === null,
      volume: node.searchVolume ?? null,
      clusterLabel: node.cluster?.label ?? null,
    };
  });
  keywords.sort(byRankThenText);
  return keywords.slice(0, limit);
}

/** Unranked as an infinite position: two unranked keywords differ by NaN, which `||` passes over to the text. */
function byRankThenText(a: PublicKeyword, b: PublicKeyword): number {
  const rank = (keyword: PublicKeyword) => keyword.position ?? Number.POSITIVE_INFINITY;
  return rank(a) - rank(b) || compareCodePoints(a.keyword, b.keyword);
}
