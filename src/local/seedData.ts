import type { AuditSeverity } from '../generated/graphql.js';
import { DAY_MS } from './keyStore.js';
import { SEED_ORGANIZATIONS } from './seedAccounts.js';

/**
 * Demo content of the embedded stand-in for the platform, generated from the compact tables
 * below. Every date is relative to `now` (injectable), and every other value comes from a PRNG
 * seeded with the site id, so two runs on the same day serve the same answers. The sites
 * exercise every rule of the public routes:
 *
 * org_demo (pro)
 *   acme.com        full data: positions 0 and null, ties, code-point ordering traps, movers,
 *                   missing check days (7 days ago is missing), offsets in date-times, a RUNNING
 *                   audit newer than the completed ones, an issue summary without INFO
 *   acme.org        same slug "acme" as acme.com; AI visibility set up but no rollup yet
 *   bigcatalog.shop more than 500 keywords (640), 100 days of checks
 *   newsite.io      no AI visibility, no completed audit (RUNNING + FAILED), checks for 3 days only
 *   quiet.dev       nothing at all: no keywords, no checks, no AI visibility, no audit runs
 * org_starter (starter), org_capped (pro, at its ceiling), org_other (enterprise, has its own
 * acme.com), org_legacy (unknown plan): one site each.
 */
export function seedPlatformData(now: Date = new Date()) {
  const organizations = new Map(
    Object.entries(SITE_SPECS).map(([id, specs]) => {
      const name = SEED_ORGANIZATIONS.find((org) => org.id === id)?.name ?? id;
      const sites = Object.entries(specs).map(([domain, spec]) => buildSite(domain, spec, now.getTime()));
      return [id, { id, name, sites }] as const;
    }),
  );
  return { organizations };
}

/**
 * The records served, shaped after platform.graphql and never changed once seeded. Date-times
 * keep the offset they were written with (the platform may send any, not only Z); `position`
 * 0 or null is not ranked; rank checks are daily, oldest first, with some days missing.
 */
export type PlatformData = ReturnType<typeof seedPlatformData>;
export type SiteRecord = ReturnType<typeof buildSite>;
export type AuditRunStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type RollupWindow = 'DAYS_7' | 'DAYS_30' | 'DAYS_90';

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
/** Offsets the seed writes date-times in, so consumers must normalise them. */
const OFFSETS = [0, 60, -300, 330] as const;
const offsetAt = (index: number): number => OFFSETS[index % OFFSETS.length] ?? 0;
const utcDate = (instantMs: number): string => new Date(instantMs).toISOString().slice(0, 10);

/** The instant (whole seconds) as RFC 3339 text in the given UTC offset, e.g. 2026-11-20T14:05:00+01:00. */
function dateTimeWithOffset(instantMs: number, offsetMinutes: number): string {
  const wall = new Date(Math.floor(instantMs / 1000) * 1000 + offsetMinutes * 60_000).toISOString().slice(0, 19);
  const abs = Math.abs(offsetMinutes);
  const hhmm = `${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
  return offsetMinutes === 0 ? `${wall}Z` : `${wall}${offsetMinutes > 0 ? '+' : '-'}${hhmm}`;
}

type N = number | null;
/** A keyword: its position 8 or more days ago and in the newest check (null for a generated one). */
type KeywordRow = [keyword: string, volume: N, cluster: string | null, before: N, now: N, trackedSinceDays?: number];
type AuditRow = readonly [
  status: AuditRunStatus,
  startedMinutesAgo: number,
  offsetMinutes: number,
  durationMinutes?: number,
  scores?: [overall: N, aiCrawl: N, contentDecay: N, technical: N],
  counts?: Partial<Record<AuditSeverity, number>>,
];
/** Generated keywords: `count` of the head × modifier pairs, in a seeded order. */
type Filler = { count: number; heads: string[]; modifiers: string[]; clusters: string[] };

interface SiteSpec {
  /** site_ + the domain by default. */
  id?: string;
  created: readonly [daysAgo: number, offsetMinutes: number];
  historyDays: number;
  /** Days ago with no completed check (never 0). */
  missingDays?: readonly number[];
  keywords?: readonly KeywordRow[];
  filler?: Filler;
  /** Prompt counts (active, paused, archived); scoreBps null: set up, but no rollup computed yet. */
  ai?: { prompts: readonly [number, number, number]; createdDaysAgo: number; scoreBps: number | null };
  audits?: readonly AuditRow[];
}

/** Comma-separated table cells as a list. */
const words = (...lines: string[]): string[] => lines.flatMap((line) => line.split(', '));

const ACME_KEYWORDS: readonly KeywordRow[] = [
  // Movers over the last week.
  ['seo audit tool', 9900, 'audits', 45, 3],
  ['rank tracker', 14800, 'rank tracking', 12, 0],
  ['ai visibility tracking', 1300, 'ai visibility', null, 8],
  ['technical seo checklist', 4400, 'audits', 9, 27],
  ['serp tracking api', 720, 'rank tracking', 61, 19],
  ['backlink checker', 22200, null, 33, null],
  ['generative engine optimization', 2900, 'ai visibility', null, 14, 3],
  ['llm brand monitoring', null, 'ai visibility', 0, 41],
  // Steady keywords, with ties on position 4 and 5 (ties order by code point).
  ['seo platform', 6600, null, 1, 1],
  ['keyword rank checker', 5400, 'rank tracking', 2, 2],
  ['Audit software', 880, 'audits', 4, 4],
  ['audit software', 1600, 'audits', 4, 4],
  ['café seo', 90, 'content', 4, 4],
  // U+FF33 sorts before U+1F680 by code point, after it by UTF-16 code unit.
  ['🚀 rank launch', 30, null, 5, 5],
  ['Ｓｅｏ tools', 40, null, 5, 5],
  ['content decay', 1900, 'content', 7, 7],
  ['site health score', 1000, 'audits', 11, 11],
  ['share of voice seo', 480, 'ai visibility', 16, 16],
  ['crawl budget', 3600, 'audits', 23, 23],
  ['core web vitals report', 2400, 'audits', 38, 38],
  ['keyword clustering', 1300, 'content', 52, 52],
  ['local rank tracking', 590, 'rank tracking', 77, 77],
  ['seo reporting dashboard', 390, null, 100, 100],
  // Unranked now: some written 0, some null (U+FF33 and U+1F680 again for KEYWORD order).
  ['Zebra seo', 20, null, 0, 0],
  ['café marketing', null, 'content', null, null],
  ['Ｓｅｏ audit', 10, null, 0, 0],
  ['🚀 seo launch', null, null, null, null],
  ['enterprise seo suite', 1000, null, 0, 0],
  ['answer engine optimization', 320, 'ai visibility', null, null],
];

const ACME_FILLER: Filler = {
  count: 45,
  heads: words('seo, rank, keyword, audit, serp, backlink, content, site, crawl, schema'),
  modifiers: words('tool, software, checker, api, report, tips, guide, pricing, free, template'),
  clusters: ['audits', 'rank tracking', 'content'],
};

const CATALOG_FILLER: Filler = {
  count: 640,
  heads: words(
    'running shoes, trail shoes, hiking boots, rain jacket, down jacket, fleece, base layer, backpack, daypack',
    'tent, sleeping bag, sleeping pad, headlamp, water bottle, trekking poles, climbing harness, chalk bag',
    'ski goggles, snowboard, bike helmet, cycling gloves, yoga mat, gym bag, swim goggles, wetsuit, camp stove',
    'cooler, hammock, compass, gaiters, beanie, sun hat, sunglasses, running socks, sports bra, shorts, leggings',
    'windbreaker',
  ),
  modifiers: words(
    'for women, for men, for kids, sale, waterproof, lightweight, best, cheap, review, size guide, near me',
    'vegan, recycled, ultralight, winter, summer, wide fit',
  ),
  clusters: words('footwear, outerwear, camping, climbing, winter sports, fitness'),
};

function smallFiller(heads: string[], clusters: string[], count: number): Filler {
  return { count, heads, modifiers: words('guide, pricing, near me, review, online, best, cheap, ideas'), clusters };
}

const DEMO_AUDITS: readonly AuditRow[] = [
  // The RUNNING run is the newest; LatestAudit must still pick a COMPLETED one.
  ['RUNNING', 40, -300],
  // Newest completed by instant, though its text (-05:00) sorts before the next one's (+05:30).
  ['COMPLETED', 20 * 60, -300, 47, [82.5, null, 64, 91.25], { CRITICAL: 3, WARNING: 17 }],
  ['COMPLETED', 22 * 60, 330, 52, [79, 70, 61.5, 88], { CRITICAL: 5, WARNING: 21, INFO: 9 }],
  ['FAILED', 3 * 24 * 60, 60],
  ['COMPLETED', 9 * 24 * 60, 60, 55, [74, 66, 58, 85], { CRITICAL: 8, WARNING: 25, INFO: 12 }],
  ['CANCELLED', 16 * 24 * 60, 0],
];

/** Each organization's sites, by domain. */
const SITE_SPECS: Readonly<Record<string, Readonly<Record<string, SiteSpec>>>> = {
  org_demo: {
    'acme.com': {
      created: [400, 60],
      historyDays: 120,
      missingDays: [2, 7, 15, 16, 31, 60],
      keywords: ACME_KEYWORDS,
      filler: ACME_FILLER,
      ai: { prompts: [42, 6, 3], createdDaysAgo: 200, scoreBps: 6120 },
      audits: DEMO_AUDITS,
    },
    'acme.org': {
      created: [90, -300],
      historyDays: 30,
      missingDays: [1],
      keywords: [
        ['acme foundation', 260, null, 3, 2],
        ['acme grants', 140, null, 0, 0],
      ],
      filler: smallFiller(['nonprofit seo', 'charity website', 'donation page'], ['nonprofit'], 8),
      ai: { prompts: [4, 0, 0], createdDaysAgo: 1, scoreBps: null },
      audits: [['COMPLETED', 5 * 24 * 60, 0, 12, [91, 88, null, 95], { INFO: 4 }]],
    },
    'bigcatalog.shop': {
      created: [700, 330],
      historyDays: 100,
      missingDays: [5, 12, 40],
      filler: CATALOG_FILLER,
      ai: { prompts: [120, 14, 30], createdDaysAgo: 300, scoreBps: 4380 },
      audits: [
        ['COMPLETED', 2 * 24 * 60, 60, 190, [68, 72.5, 49, 70], { CRITICAL: 41, WARNING: 160, INFO: 75 }],
        ['QUEUED', 5, 0],
      ],
    },
    'newsite.io': {
      created: [4, -300],
      historyDays: 3,
      keywords: [
        ['new site launch', 50, null, null, 64],
        ['newsite', 10, null, null, 1],
      ],
      filler: smallFiller(['startup seo', 'landing page'], ['launch'], 4),
      audits: [
        ['RUNNING', 10, -300],
        ['FAILED', 26 * 60, 60],
      ],
    },
    'quiet.dev': { created: [2, 0], historyDays: 0 },
  },
  org_starter: {
    'starter-shop.com': {
      created: [60, 60],
      historyDays: 30,
      filler: smallFiller(['handmade soap', 'candles', 'gift box'], ['shop'], 12),
      audits: [['COMPLETED', 7 * 24 * 60, 60, 9, [77, 60, 80, 81], { WARNING: 6 }]],
    },
  },
  org_capped: {
    'capped.net': {
      created: [200, 0],
      historyDays: 30,
      filler: smallFiller(['news', 'podcast', 'video'], ['media'], 10),
      ai: { prompts: [8, 2, 0], createdDaysAgo: 50, scoreBps: 5000 },
    },
  },
  org_other: {
    'acme.com': {
      // Same domain as org_demo's: a site of another organization must look missing.
      id: 'site_other_acme_com',
      created: [30, 0],
      historyDays: 20,
      keywords: [['other acme secret', 5, null, 9, 1]],
      ai: { prompts: [1, 0, 0], createdDaysAgo: 20, scoreBps: 9100 },
    },
    'other-brand.co': { created: [30, 0], historyDays: 20, filler: smallFiller(['brand', 'shop'], ['brand'], 6) },
  },
  org_legacy: {
    'legacy.example': { created: [900, 0], historyDays: 10, filler: smallFiller(['legacy'], ['legacy'], 3) },
  },
};

const ISSUE_TITLES: Readonly<Record<AuditSeverity, readonly string[]>> = {
  CRITICAL: words('Page returns 5xx, Canonical points to a broken page, Blocked by robots.txt, Redirect loop'),
  WARNING: words(
    'Missing meta description, Title longer than 60 characters, Slow largest contentful paint',
    'Image without alt text, Duplicate H1, Orphan page',
  ),
  INFO: words('Redirect chain of two hops, Thin content, Page not in sitemap, Hreflang without return link'),
};
const PAGE_PATHS = [
  '',
  ...words('pricing, blog, blog/seo-basics, features/audits, about, contact, docs/api, blog/ai-visibility'),
  ...words('changelog, careers, legal/privacy'),
];
/** In the schema's order, most severe first. */
export const SEVERITIES: readonly AuditSeverity[] = ['CRITICAL', 'WARNING', 'INFO'];

function buildSite(domain: string, spec: SiteSpec, nowMs: number) {
  const id = spec.id ?? `site_${domain.replace(/\W/g, '_')}`;
  const random = seededRandom(id);
  const todayMs = nowMs - (nowMs % DAY_MS);
  const history = spec.historyDays;
  const written = spec.keywords ?? [];
  // Hand-written rows keep their before/now positions; generated ones take a seeded random walk.
  const rows = [...written, ...(spec.filler ? fillerRows(spec.filler, written, random) : [])];
  const series = rows.map((row, index) => positionSeries(index < written.length ? row : null, history, random));
  const since = rows.map(([, , , , , trackedSinceDays = history]) => trackedSinceDays);
  const keywords = rows.map(([keyword, searchVolume, cluster], index) => ({
    id: `${id}_kw_${String(index + 1).padStart(4, '0')}`,
    keyword,
    position: series[index]?.[0] ?? null,
    searchVolume,
    cluster: cluster === null ? null : { id: `cluster_${cluster.replace(/\W+/g, '_')}`, label: cluster },
    createdAt: dateTimeWithOffset(
      todayMs - Math.min(since[index] ?? history, history) * DAY_MS - HOUR_MS - random.int(0, 600) * MINUTE_MS,
      offsetAt(index),
    ),
  }));

  const rankChecks = [];
  for (let daysAgo = history; daysAgo >= 0 && keywords.length > 0; daysAgo--) {
    if (daysAgo > 0 && spec.missingDays?.includes(daysAgo)) continue;
    const entries = keywords
      .map(({ id: keywordId, keyword }, i) => ({ keywordId, keyword, position: series[i]?.[daysAgo] ?? null }))
      .filter((_entry, i) => (since[i] ?? history) >= daysAgo);
    rankChecks.push({ date: utcDate(todayMs - daysAgo * DAY_MS), entries });
  }

  const ai = spec.ai;
  const [active, paused, archived] = ai?.prompts ?? [0, 0, 0];
  return {
    id,
    domain,
    slug: domain.split('.')[0] ?? domain,
    createdAt: dateTimeWithOffset(nowMs - spec.created[0] * DAY_MS - 3 * HOUR_MS, spec.created[1]),
    keywords,
    rankChecks,
    aiVisibility: ai
      ? {
          id: `${id}_aiv`,
          createdAt: dateTimeWithOffset(nowMs - ai.createdDaysAgo * DAY_MS - 5 * HOUR_MS, 60),
          promptCounts: { active, paused, archived },
          rollups: ai.scoreBps === null ? [] : rollups(ai.scoreBps, nowMs, random),
        }
      : null,
    auditRuns: (spec.audits ?? []).map((audit) => buildAuditRun(domain, audit, nowMs, random)),
  };
}

/** Every head × modifier pair not written by hand, shuffled; the first `count` of them. */
function fillerRows(filler: Filler, written: readonly KeywordRow[], random: SeededRandom): KeywordRow[] {
  const taken = new Set(written.map(([keyword]) => keyword));
  const combos = filler.heads
    .flatMap((head) => filler.modifiers.map((modifier) => `${head} ${modifier}`))
    .filter((text) => !taken.has(text));
  for (let i = combos.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [combos[i], combos[j]] = [combos[j] as string, combos[i] as string];
  }
  return combos.slice(0, filler.count).map((keyword) => {
    const volume = random.chance(0.2) ? null : random.int(1, 2000) * 10;
    const cluster = random.chance(0.25) ? null : random.pick(filler.clusters);
    const row: KeywordRow = [keyword, volume, cluster, null, null];
    if (random.chance(0.05)) row[5] = random.int(0, 20);
    return row;
  });
}

const clampPosition = (position: number): number => Math.min(100, Math.max(1, position));
const isRanked = (position: number | null): position is number => position !== null && position > 0;

/** Position per day ago (index 0 = newest check) for one keyword. */
function positionSeries(row: KeywordRow | null, history: number, random: SeededRandom): Array<number | null> {
  const series: Array<number | null> = new Array(history + 1).fill(null);
  if (row === null) {
    let position: number | null = random.chance(0.7) ? random.int(1, 100) : random.chance(0.5) ? 0 : null;
    for (let daysAgo = history; daysAgo >= 0; daysAgo--) {
      if (isRanked(position)) {
        position = random.chance(0.03) ? random.pick([0, null]) : clampPosition(position + random.int(-2, 2));
      } else if (random.chance(0.04)) {
        position = random.int(60, 100);
      }
      series[daysAgo] = position;
    }
    return series;
  }
  const [, , , before, now] = row;
  for (let daysAgo = history; daysAgo >= 0; daysAgo--) {
    if (daysAgo === 0) series[daysAgo] = now;
    else if (daysAgo > 8) {
      series[daysAgo] = isRanked(before) && before !== now ? clampPosition(before + random.int(-2, 2)) : before;
    } else if (isRanked(before) && isRanked(now)) {
      series[daysAgo] = Math.round(before + ((now - before) * (8 - daysAgo)) / 8);
    } else {
      series[daysAgo] = daysAgo > 4 ? before : now;
    }
  }
  return series;
}

/** Eight weekly rollups per window, drifting from `scoreBps`, and one more for DAYS_30. */
function rollups(scoreBps: number, nowMs: number, random: SeededRandom) {
  const rollup = (window: RollupWindow, score: number, computedMs: number, offset: number) => ({
    window,
    scoreBps: score,
    appearanceRate: Math.round(Math.min(1, (score / 10_000) * (0.6 + random.next() * 0.2)) * 1000) / 1000,
    shareOfVoice: Math.round(Math.min(1, (score / 10_000) * (0.3 + random.next() * 0.2)) * 1000) / 1000,
    computedAt: dateTimeWithOffset(computedMs, offset),
  });
  const all: ReturnType<typeof rollup>[] = [];
  for (const window of ['DAYS_7', 'DAYS_30', 'DAYS_90'] as const) {
    let score = scoreBps;
    for (let week = 0; week < 8; week++) {
      all.push(rollup(window, score, nowMs - 3 * HOUR_MS - week * 7 * DAY_MS, week === 0 ? -300 : offsetAt(week)));
      score = Math.min(10_000, Math.max(0, score + random.int(-400, 300)));
    }
  }
  // Half an hour older than the newest 30-day rollup, but its +01:00 text sorts after it:
  // "newest first" must compare instants, not strings.
  all.push(rollup('DAYS_30', scoreBps - 140, nowMs - 3.5 * HOUR_MS, 60));
  return all;
}

function buildAuditRun(domain: string, audit: AuditRow, nowMs: number, random: SeededRandom) {
  const [status, startedMinutesAgo, offset, durationMinutes, scores, counts] = audit;
  const startedMs = nowMs - startedMinutesAgo * MINUTE_MS;
  const issues = SEVERITIES.flatMap((severity) =>
    Array.from({ length: counts?.[severity] ?? 0 }, () => ({
      id: random.uuid(),
      severity,
      title: random.pick(ISSUE_TITLES[severity]),
      pageUrl: `https://${domain}/${random.pick(PAGE_PATHS)}`,
    })),
  );
  const [overall, aiCrawl, contentDecay, technical] = scores ?? [null, null, null, null];
  return {
    id: random.uuid(),
    status,
    startedAt: dateTimeWithOffset(startedMs, offset),
    completedAt:
      durationMinutes === undefined ? null : dateTimeWithOffset(startedMs + durationMinutes * MINUTE_MS, offset),
    scores: scores ? { overall, aiCrawl, contentDecay, technical } : null,
    issues,
  };
}

/** mulberry32 seeded with the FNV-1a hash of the text: the same numbers on every run. */
function seededRandom(seedText: string) {
  let state = 0x811c9dc5;
  for (let i = 0; i < seedText.length; i++) state = Math.imul(state ^ seedText.charCodeAt(i), 0x01000193) >>> 0;
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  /** An integer in [min, max], both included. */
  const int = (min: number, max: number): number => min + Math.floor(next() * (max - min + 1));
  const hex = (length: number) => Array.from({ length }, () => int(0, 15).toString(16)).join('');
  return {
    next,
    int,
    chance: (probability: number) => next() < probability,
    pick: <T>(items: readonly T[]): T => items[int(0, items.length - 1)] as T,
    /** Shaped as a version-4 UUID. */
    uuid: () => `${hex(8)}-${hex(4)}-4${hex(3)}-${'89ab'[int(0, 3)]}${hex(3)}-${hex(12)}`,
  };
}
type SeededRandom = ReturnType<typeof seededRandom>;
