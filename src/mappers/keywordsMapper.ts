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

function byRankThenText(a: PublicKeyword, b: PublicKeyword): number {
  if (a.position !== null && b.position !== null && a.position !== b.position) return a.position - b.position;
  if (a.position === null && b.position !== null) return 1;
  if (a.position !== null && b.position === null) return -1;
  return compareCodePoints(a.keyword, b.keyword);
}
