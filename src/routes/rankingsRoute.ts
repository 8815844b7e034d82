import { z } from 'zod';
import { RankingsDocument } from '../generated/graphql.js';
import { toMovers } from '../mappers/rankingsMapper.js';
import { rankingsPayload } from './payloadSchemas.js';
import { defineRoute } from './publicRoute.js';
import { lenientPositiveInt, siteParameter } from './queryRules.js';
import { singleSite } from './singleSite.js';

const DAY_MS = 86_400_000;
const MAX_DAYS = 90;
const MAX_LIMIT = 100;

export const rankingsQuery = z.object({
  site: siteParameter,
  days: lenientPositiveInt(7, MAX_DAYS, 'The trailing window in days.'),
  limit: lenientPositiveInt(10, MAX_LIMIT, 'How many movers to list at most.'),
});

export const rankingsRoute = defineRoute({
  path: '/v1/api/rankings',
  operationId: 'getRankings',
  summary: 'Keywords whose rankings moved most',
  description:
    'Compares the newest rank check with the newest one on or before `days` days ago (UTC) and lists the ' +
    'keywords whose position changed, largest move first.',
  query: rankingsQuery,
  data: rankingsPayload(MAX_DAYS, MAX_LIMIT),
  params({ site, days, limit }, now) {
    // The window starts `days` calendar days before today (UTC); it is part of the
    // cache key so an answer never outlives the day it was computed for.
    const startDate = new Date(now.getTime() - days * DAY_MS).toISOString().slice(0, 10);
    return { site, days, limit, startDate };
  },
  async load({ platform, organizationId }, { site, days, limit, startDate }) {
    const answer = await platform.request(RankingsDocument, { organizationId, site, startDate });
    const match = singleSite(answer.organization);
    return { site, days, movers: toMovers(match.latest, match.start, limit) };
  },
});
