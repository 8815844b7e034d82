import type { RankingsQuery } from '../generated/graphql.js';
import type { Mover } from '../routes/payloadSchemas.js';
import { compareCodePoints } from './codePointOrder.js';

type RankedSite = NonNullable<RankingsQuery['organization']>['siteLookup'][number];
export type RankEntry = NonNullable<RankedSite['latest']>['entries'][number];
export type StartEntry = NonNullable<RankedSite['start']>['entries'][number];

/** The platform writes "not ranked in the top 100" as 0 or null; the public API as null. */
export function toPublicPosition(position: number | null | undefined): number | null {
  return typeof position === 'number' && position > 0 ? position : null;
}

/** For ordering only: an unranked side counts as just below the top 100. */
const UNRANKED_FOR_ORDERING = 101;

/**
 * Keywords whose position changed between the start snapshot and the newest one,
 * largest move first. `latest` null (no check at all) → none; `start` null (no
 * check that old) → every keyword ranked now moved from null.
 */
export function toMovers(
  latest: { entries: readonly RankEntry[] } | null,
  start: { entries: readonly StartEntry[] } | null,
  limit: number,
): Mover[] {
  if (latest === null) return [];
  const startPositions = new Map<string, number | null>();
  for (const entry of start?.entries ?? []) startPositions.set(entry.keywordId, toPublicPosition(entry.position));

  const moved: Array<Mover & { size: number }> = [];
  for (const entry of latest.entries) {
    const to = toPublicPosition(entry.position);
    const from = startPositions.get(entry.keywordId) ?? null;
    if (from === to) continue;
    const delta = from !== null && to !== null ? from - to : null;
    const size = Math.abs((from ?? UNRANKED_FOR_ORDERING) - (to ?? UNRANKED_FOR_ORDERING));
    moved.push({ keyword: entry.keyword, from, to, delta, size });
  }
  moved.sort((a, b) => b.size - a.size || compareCodePoints(a.keyword, b.keyword));
  return moved.slice(0, limit).map(({ keyword, from, to, delta }) => ({ keyword, from, to, delta }));
}
