import { RankingsDocument } from '../generated/graphql.js';
import { toMovers, toRankingsPayload } from '../mappers/rankingsMapper.js';
import { defineRoute } from './publicRoute.js';
import { positiveIntOrDefault, requireSite } from './queryParams.js';
import { singleSite } from './singleSite.js';

const DAY_MS = 86_400_000;

export const rankingsRoute = defineRoute({
  path: '/v1/api/rankings',
  parse(query, now) {
    const days = positiveIntOrDefault(query.days, 7, 90);
    // The window starts `days` calendar days before today (UTC); it is part of the
    // cache key so an answer never outlives the day it was computed for.
    const startDate = new Date(now.getTime() - days * DAY_MS).toISOString().slice(0, 10);
    return { site: requireSite(query), days, limit: positiveIntOrDefault(query.limit, 10, 100), startDate };
  },
  async load({ platform, organizationId }, { site, days, limit, startDate }) {
    const answer = await platform.request(RankingsDocument, { organizationId, site, startDate });
    const match = singleSite(answer.organization?.siteLookup);
    return toRankingsPayload(site, days, toMovers(match.latest, match.start, limit));
  },
});
