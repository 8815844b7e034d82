import { DAY_MS, dateTimeWithOffset, utcDate } from './dateText.js';
import type {
  AiVisibilityRecord,
  AuditIssueRecord,
  AuditRunRecord,
  AuditRunStatus,
  AuditSeverity,
  KeywordRecord,
  OrganizationRecord,
  PlatformData,
  RankCheckRecord,
  RollupRecord,
  RollupWindow,
  SiteRecord,
} from './platformData.js';
import { SEED_ORGANIZATIONS } from './seedAccounts.js';
import { type SeededRandom, seededRandom } from './seededRandom.js';

/**
 * Demo content of the local platform. Every date is relative to `now` (injectable), and
 * every other value comes from a seeded PRNG, so two runs on the same day serve the same
 * answers. The sites exercise every rule of the public routes:
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
export function seedPlatformData(now: Date = new Date()): PlatformData {
  const nowMs = now.getTime();
  const organizations = new Map<string, OrganizationRecord>();
  for (const [organizationId, specs] of Object.entries(SITE_SPECS)) {
    const name = SEED_ORGANIZATIONS.find((org) => org.id === organizationId)?.name ?? organizationId;
    organizations.set(organizationId, {
      id: organizationId,
      name,
      sites: specs.map((spec) => buildSite(spec, nowMs)),
    });
  }
  return { organizations };
}

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
/** Offsets the seed writes date-times in, so consumers must normalise them. */
const OFFSETS = [0, 60, -300, 330] as const;

interface KeywordPlan {
  keyword: string;
  volume: number | null;
  cluster: string | null;
  /** Position 8 or more days ago. */
  before: number | null;
  /** Position in the newest check. */
  now: number | null;
  /** First tracked this many days ago (default: the whole history). */
  trackedSinceDays?: number;
  /** Generated keyword: positions follow a seeded random walk instead of before/now. */
  randomWalk?: true;
}

interface AiSpec {
  active: number;
  paused: number;
  archived: number;
  createdDaysAgo: number;
  /** false: set up, but no rollup has been computed yet. */
  withRollups: boolean;
  scoreBps: number;
}

interface AuditSpec {
  status: AuditRunStatus;
  startedMinutesAgo: number;
  offsetMinutes: number;
  durationMinutes?: number;
  scores?: { overall: number | null; aiCrawl: number | null; contentDecay: number | null; technical: number | null };
  counts?: Partial<Record<AuditSeverity, number>>;
}

interface SiteSpec {
  id: string;
  domain: string;
  createdDaysAgo: number;
  createdOffsetMinutes: number;
  historyDays: number;
  /** Days ago with no completed check (never 0). */
  missingDays: readonly number[];
  keywords: readonly KeywordPlan[];
  filler: { count: number; heads: readonly string[]; modifiers: readonly string[]; clusters: readonly string[] } | null;
  ai: AiSpec | null;
  audits: readonly AuditSpec[];
}

const ACME_KEYWORDS: readonly KeywordPlan[] = [
  // Movers over the last week.
  { keyword: 'seo audit tool', volume: 9900, cluster: 'audits', before: 45, now: 3 },
  { keyword: 'rank tracker', volume: 14800, cluster: 'rank tracking', before: 12, now: 0 },
  { keyword: 'ai visibility tracking', volume: 1300, cluster: 'ai visibility', before: null, now: 8 },
  { keyword: 'technical seo checklist', volume: 4400, cluster: 'audits', before: 9, now: 27 },
  { keyword: 'serp tracking api', volume: 720, cluster: 'rank tracking', before: 61, now: 19 },
  { keyword: 'backlink checker', volume: 22200, cluster: null, before: 33, now: null },
  {
    keyword: 'generative engine optimization',
    volume: 2900,
    cluster: 'ai visibility',
    before: null,
    now: 14,
    trackedSinceDays: 3,
  },
  { keyword: 'llm brand monitoring', volume: null, cluster: 'ai visibility', before: 0, now: 41 },
  // Steady keywords, with ties on position 4 and 5 (ties order by code point).
  { keyword: 'seo platform', volume: 6600, cluster: null, before: 1, now: 1 },
  { keyword: 'keyword rank checker', volume: 5400, cluster: 'rank tracking', before: 2, now: 2 },
  { keyword: 'Audit software', volume: 880, cluster: 'audits', before: 4, now: 4 },
  { keyword: 'audit software', volume: 1600, cluster: 'audits', before: 4, now: 4 },
  { keyword: 'café seo', volume: 90, cluster: 'content', before: 4, now: 4 },
  // U+FF33 sorts before U+1F680 by code point, after it by UTF-16 code unit.
  { keyword: '🚀 rank launch', volume: 30, cluster: null, before: 5, now: 5 },
  { keyword: 'Ｓｅｏ tools', volume: 40, cluster: null, before: 5, now: 5 },
  { keyword: 'content decay', volume: 1900, cluster: 'content', before: 7, now: 7 },
  { keyword: 'site health score', volume: 1000, cluster: 'audits', before: 11, now: 11 },
  { keyword: 'share of voice seo', volume: 480, cluster: 'ai visibility', before: 16, now: 16 },
  { keyword: 'crawl budget', volume: 3600, cluster: 'audits', before: 23, now: 23 },
  { keyword: 'core web vitals report', volume: 2400, cluster: 'audits', before: 38, now: 38 },
  { keyword: 'keyword clustering', volume: 1300, cluster: 'content', before: 52, now: 52 },
  { keyword: 'local rank tracking', volume: 590, cluster: 'rank tracking', before: 77, now: 77 },
  { keyword: 'seo reporting dashboard', volume: 390, cluster: null, before: 100, now: 100 },
  // Unranked now: some written 0, some null (U+FF33 and U+1F680 again for KEYWORD order).
  { keyword: 'Zebra seo', volume: 20, cluster: null, before: 0, now: 0 },
  { keyword: 'café marketing', volume: null, cluster: 'content', before: null, now: null },
  { keyword: 'Ｓｅｏ audit', volume: 10, cluster: null, before: 0, now: 0 },
  { keyword: '🚀 seo launch', volume: null, cluster: null, before: null, now: null },
  { keyword: 'enterprise seo suite', volume: 1000, cluster: null, before: 0, now: 0 },
  { keyword: 'answer engine optimization', volume: 320, cluster: 'ai visibility', before: null, now: null },
];

const ACME_FILLER = {
  count: 45,
  heads: ['seo', 'rank', 'keyword', 'audit', 'serp', 'backlink', 'content', 'site', 'crawl', 'schema'],
  modifiers: ['tool', 'software', 'checker', 'api', 'report', 'tips', 'guide', 'pricing', 'free', 'template'],
  clusters: ['audits', 'rank tracking', 'content'],
};

const CATALOG_FILLER = {
  count: 640,
  heads: [
    'running shoes',
    'trail shoes',
    'hiking boots',
    'rain jacket',
    'down jacket',
    'fleece',
    'base layer',
    'backpack',
    'daypack',
    'tent',
    'sleeping bag',
    'sleeping pad',
    'headlamp',
    'water bottle',
    'trekking poles',
    'climbing harness',
    'chalk bag',
    'ski goggles',
    'snowboard',
    'bike helmet',
    'cycling gloves',
    'yoga mat',
    'gym bag',
    'swim goggles',
    'wetsuit',
    'camp stove',
    'cooler',
    'hammock',
    'compass',
    'gaiters',
    'beanie',
    'sun hat',
    'sunglasses',
    'running socks',
    'sports bra',
    'shorts',
    'leggings',
    'windbreaker',
  ],
  modifiers: [
    'for women',
    'for men',
    'for kids',
    'sale',
    'waterproof',
    'lightweight',
    'best',
    'cheap',
    'review',
    'size guide',
    'near me',
    'vegan',
    'recycled',
    'ultralight',
    'winter',
    'summer',
    'wide fit',
  ],
  clusters: ['footwear', 'outerwear', 'camping', 'climbing', 'winter sports', 'fitness'],
};

const SMALL_FILLER = (heads: readonly string[], clusters: readonly string[], count: number) => ({
  count,
  heads,
  modifiers: ['guide', 'pricing', 'near me', 'review', 'online', 'best', 'cheap', 'ideas'],
  clusters,
});

const DEMO_AUDITS: readonly AuditSpec[] = [
  // The RUNNING run is the newest; LatestAudit must still pick a COMPLETED one.
  { status: 'RUNNING', startedMinutesAgo: 40, offsetMinutes: -300 },
  // Newest completed by instant, though its text (-05:00) sorts before the next one's (+05:30).
  {
    status: 'COMPLETED',
    startedMinutesAgo: 20 * 60,
    offsetMinutes: -300,
    durationMinutes: 47,
    scores: { overall: 82.5, aiCrawl: null, contentDecay: 64, technical: 91.25 },
    counts: { CRITICAL: 3, WARNING: 17 },
  },
  {
    status: 'COMPLETED',
    startedMinutesAgo: 22 * 60,
    offsetMinutes: 330,
    durationMinutes: 52,
    scores: { overall: 79, aiCrawl: 70, contentDecay: 61.5, technical: 88 },
    counts: { CRITICAL: 5, WARNING: 21, INFO: 9 },
  },
  { status: 'FAILED', startedMinutesAgo: 3 * 24 * 60, offsetMinutes: 60 },
  {
    status: 'COMPLETED',
    startedMinutesAgo: 9 * 24 * 60,
    offsetMinutes: 60,
    durationMinutes: 55,
    scores: { overall: 74, aiCrawl: 66, contentDecay: 58, technical: 85 },
    counts: { CRITICAL: 8, WARNING: 25, INFO: 12 },
  },
  { status: 'CANCELLED', startedMinutesAgo: 16 * 24 * 60, offsetMinutes: 0 },
];

const SITE_SPECS: Readonly<Record<string, readonly SiteSpec[]>> = {
  org_demo: [
    {
      id: 'site_acme_com',
      domain: 'acme.com',
      createdDaysAgo: 400,
      createdOffsetMinutes: 60,
      historyDays: 120,
      missingDays: [2, 7, 15, 16, 31, 60],
      keywords: ACME_KEYWORDS,
      filler: ACME_FILLER,
      ai: { active: 42, paused: 6, archived: 3, createdDaysAgo: 200, withRollups: true, scoreBps: 6120 },
      audits: DEMO_AUDITS,
    },
    {
      id: 'site_acme_org',
      domain: 'acme.org',
      createdDaysAgo: 90,
      createdOffsetMinutes: -300,
      historyDays: 30,
      missingDays: [1],
      keywords: [
        { keyword: 'acme foundation', volume: 260, cluster: null, before: 3, now: 2 },
        { keyword: 'acme grants', volume: 140, cluster: null, before: 0, now: 0 },
      ],
      filler: SMALL_FILLER(['nonprofit seo', 'charity website', 'donation page'], ['nonprofit'], 8),
      ai: { active: 4, paused: 0, archived: 0, createdDaysAgo: 1, withRollups: false, scoreBps: 0 },
      audits: [
        {
          status: 'COMPLETED',
          startedMinutesAgo: 5 * 24 * 60,
          offsetMinutes: 0,
          durationMinutes: 12,
          scores: { overall: 91, aiCrawl: 88, contentDecay: null, technical: 95 },
          counts: { INFO: 4 },
        },
      ],
    },
    {
      id: 'site_bigcatalog_shop',
      domain: 'bigcatalog.shop',
      createdDaysAgo: 700,
      createdOffsetMinutes: 330,
      historyDays: 100,
      missingDays: [5, 12, 40],
      keywords: [],
      filler: CATALOG_FILLER,
      ai: { active: 120, paused: 14, archived: 30, createdDaysAgo: 300, withRollups: true, scoreBps: 4380 },
      audits: [
        {
          status: 'COMPLETED',
          startedMinutesAgo: 2 * 24 * 60,
          offsetMinutes: 60,
          durationMinutes: 190,
          scores: { overall: 68, aiCrawl: 72.5, contentDecay: 49, technical: 70 },
          counts: { CRITICAL: 41, WARNING: 160, INFO: 75 },
        },
        { status: 'QUEUED', startedMinutesAgo: 5, offsetMinutes: 0 },
      ],
    },
    {
      id: 'site_newsite_io',
      domain: 'newsite.io',
      createdDaysAgo: 4,
      createdOffsetMinutes: -300,
      historyDays: 3,
      missingDays: [],
      keywords: [
        { keyword: 'new site launch', volume: 50, cluster: null, before: null, now: 64 },
        { keyword: 'newsite', volume: 10, cluster: null, before: null, now: 1 },
      ],
      filler: SMALL_FILLER(['startup seo', 'landing page'], ['launch'], 4),
      ai: null,
      audits: [
        { status: 'RUNNING', startedMinutesAgo: 10, offsetMinutes: -300 },
        { status: 'FAILED', startedMinutesAgo: 26 * 60, offsetMinutes: 60 },
      ],
    },
    {
      id: 'site_quiet_dev',
      domain: 'quiet.dev',
      createdDaysAgo: 2,
      createdOffsetMinutes: 0,
      historyDays: 0,
      missingDays: [],
      keywords: [],
      filler: null,
      ai: null,
      audits: [],
    },
  ],
  org_starter: [
    {
      id: 'site_starter_shop_com',
      domain: 'starter-shop.com',
      createdDaysAgo: 60,
      createdOffsetMinutes: 60,
      historyDays: 30,
      missingDays: [],
      keywords: [],
      filler: SMALL_FILLER(['handmade soap', 'candles', 'gift box'], ['shop'], 12),
      ai: null,
      audits: [
        {
          status: 'COMPLETED',
          startedMinutesAgo: 7 * 24 * 60,
          offsetMinutes: 60,
          durationMinutes: 9,
          scores: { overall: 77, aiCrawl: 60, contentDecay: 80, technical: 81 },
          counts: { WARNING: 6 },
        },
      ],
    },
  ],
  org_capped: [
    {
      id: 'site_capped_net',
      domain: 'capped.net',
      createdDaysAgo: 200,
      createdOffsetMinutes: 0,
      historyDays: 30,
      missingDays: [],
      keywords: [],
      filler: SMALL_FILLER(['news', 'podcast', 'video'], ['media'], 10),
      ai: { active: 8, paused: 2, archived: 0, createdDaysAgo: 50, withRollups: true, scoreBps: 5000 },
      audits: [],
    },
  ],
  org_other: [
    {
      // Same domain as org_demo's: a site of another organization must look missing.
      id: 'site_other_acme_com',
      domain: 'acme.com',
      createdDaysAgo: 30,
      createdOffsetMinutes: 0,
      historyDays: 20,
      missingDays: [],
      keywords: [{ keyword: 'other acme secret', volume: 5, cluster: null, before: 9, now: 1 }],
      filler: null,
      ai: { active: 1, paused: 0, archived: 0, createdDaysAgo: 20, withRollups: true, scoreBps: 9100 },
      audits: [],
    },
    {
      id: 'site_other_brand_co',
      domain: 'other-brand.co',
      createdDaysAgo: 30,
      createdOffsetMinutes: 0,
      historyDays: 20,
      missingDays: [],
      keywords: [],
      filler: SMALL_FILLER(['brand', 'shop'], ['brand'], 6),
      ai: null,
      audits: [],
    },
  ],
  org_legacy: [
    {
      id: 'site_legacy_example',
      domain: 'legacy.example',
      createdDaysAgo: 900,
      createdOffsetMinutes: 0,
      historyDays: 10,
      missingDays: [],
      keywords: [],
      filler: SMALL_FILLER(['legacy'], ['legacy'], 3),
      ai: null,
      audits: [],
    },
  ],
};

const ISSUE_TITLES: Readonly<Record<AuditSeverity, readonly string[]>> = {
  CRITICAL: ['Page returns 5xx', 'Canonical points to a broken page', 'Blocked by robots.txt', 'Redirect loop'],
  WARNING: [
    'Missing meta description',
    'Title longer than 60 characters',
    'Slow largest contentful paint',
    'Image without alt text',
    'Duplicate H1',
    'Orphan page',
  ],
  INFO: ['Redirect chain of two hops', 'Thin content', 'Page not in sitemap', 'Hreflang without return link'],
};
const PAGE_PATHS = [
  '',
  'pricing',
  'blog',
  'blog/seo-basics',
  'features/audits',
  'about',
  'contact',
  'docs/api',
  'blog/ai-visibility',
  'changelog',
  'careers',
  'legal/privacy',
];
const SEVERITIES: readonly AuditSeverity[] = ['CRITICAL', 'WARNING', 'INFO'];
const WINDOWS: readonly RollupWindow[] = ['DAYS_7', 'DAYS_30', 'DAYS_90'];

function buildSite(spec: SiteSpec, nowMs: number): SiteRecord {
  const random = seededRandom(spec.id);
  const todayMs = Date.UTC(
    new Date(nowMs).getUTCFullYear(),
    new Date(nowMs).getUTCMonth(),
    new Date(nowMs).getUTCDate(),
  );
  const plans = [...spec.keywords, ...fillerPlans(spec, random)];
  const series = plans.map((plan) => positionSeries(plan, spec.historyDays, random));

  const keywords: KeywordRecord[] = plans.map((plan, index) => {
    const trackedSince = Math.min(plan.trackedSinceDays ?? spec.historyDays, spec.historyDays);
    const createdMs = todayMs - trackedSince * DAY_MS - HOUR_MS - random.int(0, 600) * MINUTE_MS;
    return {
      id: `${spec.id}_kw_${String(index + 1).padStart(4, '0')}`,
      keyword: plan.keyword,
      position: series[index]?.[0] ?? null,
      searchVolume: plan.volume,
      cluster:
        plan.cluster === null ? null : { id: `cluster_${plan.cluster.replace(/\W+/g, '_')}`, label: plan.cluster },
      createdAt: dateTimeWithOffset(createdMs, OFFSETS[index % OFFSETS.length] ?? 0),
    };
  });

  const rankChecks: RankCheckRecord[] = [];
  if (keywords.length > 0) {
    for (let daysAgo = spec.historyDays; daysAgo >= 0; daysAgo--) {
      if (daysAgo > 0 && spec.missingDays.includes(daysAgo)) continue;
      const entries = [];
      for (let i = 0; i < keywords.length; i++) {
        const keyword = keywords[i];
        const plan = plans[i];
        if (!keyword || !plan || (plan.trackedSinceDays ?? spec.historyDays) < daysAgo) continue;
        entries.push({ keywordId: keyword.id, keyword: keyword.keyword, position: series[i]?.[daysAgo] ?? null });
      }
      rankChecks.push({ date: utcDate(todayMs - daysAgo * DAY_MS), entries });
    }
  }

  return {
    id: spec.id,
    domain: spec.domain,
    slug: spec.domain.split('.')[0] ?? spec.domain,
    createdAt: dateTimeWithOffset(nowMs - spec.createdDaysAgo * DAY_MS - 3 * HOUR_MS, spec.createdOffsetMinutes),
    keywords,
    rankChecks,
    aiVisibility: spec.ai === null ? null : buildAiVisibility(spec, spec.ai, nowMs, random),
    auditRuns: spec.audits.map((audit) => buildAuditRun(spec.domain, audit, nowMs, random)),
  };
}

/** Generated keywords: every head × modifier pair in a seeded order, `count` of them. */
function fillerPlans(spec: SiteSpec, random: SeededRandom): KeywordPlan[] {
  if (spec.filler === null) return [];
  const { heads, modifiers, clusters, count } = spec.filler;
  const taken = new Set(spec.keywords.map((k) => k.keyword));
  const combos: string[] = [];
  for (const head of heads) {
    for (const modifier of modifiers) {
      const text = `${head} ${modifier}`;
      if (!taken.has(text)) combos.push(text);
    }
  }
  for (let i = combos.length - 1; i > 0; i--) {
    const j = random.int(0, i);
    [combos[i], combos[j]] = [combos[j] as string, combos[i] as string];
  }
  return combos.slice(0, count).map((keyword) => ({
    keyword,
    volume: random.chance(0.2) ? null : random.int(1, 2000) * 10,
    cluster: random.chance(0.25) ? null : random.pick(clusters),
    before: null,
    now: null,
    randomWalk: true as const,
    ...(random.chance(0.05) ? { trackedSinceDays: random.int(0, 20) } : {}),
  }));
}

/** Position per day ago (index 0 = newest check) for one keyword. */
function positionSeries(plan: KeywordPlan, historyDays: number, random: SeededRandom): Array<number | null> {
  const series: Array<number | null> = new Array(historyDays + 1).fill(null);
  if (plan.randomWalk) {
    let position: number | null = random.chance(0.7) ? random.int(1, 100) : random.chance(0.5) ? 0 : null;
    for (let daysAgo = historyDays; daysAgo >= 0; daysAgo--) {
      if (position !== null && position > 0) {
        position = random.chance(0.03)
          ? random.pick([0, null])
          : Math.min(100, Math.max(1, position + random.int(-2, 2)));
      } else if (random.chance(0.04)) {
        position = random.int(60, 100);
      }
      series[daysAgo] = position;
    }
    return series;
  }
  const ranked = (p: number | null): p is number => p !== null && p > 0;
  for (let daysAgo = historyDays; daysAgo >= 0; daysAgo--) {
    let position: number | null;
    if (daysAgo === 0) position = plan.now;
    else if (daysAgo > 8) {
      position =
        ranked(plan.before) && plan.before !== plan.now
          ? Math.min(100, Math.max(1, plan.before + random.int(-2, 2)))
          : plan.before;
    } else if (ranked(plan.before) && ranked(plan.now)) {
      position = Math.round(plan.before + ((plan.now - plan.before) * (8 - daysAgo)) / 8);
    } else {
      position = daysAgo > 4 ? plan.before : plan.now;
    }
    series[daysAgo] = position;
  }
  return series;
}

function buildAiVisibility(spec: SiteSpec, ai: AiSpec, nowMs: number, random: SeededRandom): AiVisibilityRecord {
  const rollups: RollupRecord[] = [];
  if (ai.withRollups) {
    for (const window of WINDOWS) {
      let score = ai.scoreBps;
      for (let week = 0; week < 8; week++) {
        const computedMs = nowMs - 3 * HOUR_MS - week * 7 * DAY_MS;
        rollups.push(
          rollup(window, score, computedMs, week === 0 ? -300 : (OFFSETS[week % OFFSETS.length] ?? 0), random),
        );
        score = Math.min(10_000, Math.max(0, score + random.int(-400, 300)));
      }
    }
    // Half an hour older than the newest 30-day rollup, but its +01:00 text sorts after it:
    // "newest first" must compare instants, not strings.
    rollups.push(rollup('DAYS_30', ai.scoreBps - 140, nowMs - 3.5 * HOUR_MS, 60, random));
  }
  return {
    id: `${spec.id}_aiv`,
    createdAt: dateTimeWithOffset(nowMs - ai.createdDaysAgo * DAY_MS - 5 * HOUR_MS, 60),
    promptCounts: { active: ai.active, paused: ai.paused, archived: ai.archived },
    rollups,
  };
}

function rollup(
  window: RollupWindow,
  scoreBps: number,
  computedMs: number,
  offset: number,
  random: SeededRandom,
): RollupRecord {
  const rate = scoreBps / 10_000;
  return {
    window,
    scoreBps,
    appearanceRate: Math.round(Math.min(1, rate * (0.6 + random.next() * 0.2)) * 1000) / 1000,
    shareOfVoice: Math.round(Math.min(1, rate * (0.3 + random.next() * 0.2)) * 1000) / 1000,
    computedAt: dateTimeWithOffset(computedMs, offset),
  };
}

function buildAuditRun(domain: string, audit: AuditSpec, nowMs: number, random: SeededRandom): AuditRunRecord {
  const startedMs = nowMs - audit.startedMinutesAgo * MINUTE_MS;
  const completed = audit.status === 'COMPLETED';
  const issues: AuditIssueRecord[] = [];
  if (completed) {
    for (const severity of SEVERITIES) {
      for (let i = 0; i < (audit.counts?.[severity] ?? 0); i++) {
        issues.push({
          id: random.uuid(),
          severity,
          title: random.pick(ISSUE_TITLES[severity]),
          pageUrl: `https://${domain}/${random.pick(PAGE_PATHS)}`,
        });
      }
    }
  }
  return {
    id: random.uuid(),
    status: audit.status,
    startedAt: dateTimeWithOffset(startedMs, audit.offsetMinutes),
    completedAt: completed
      ? dateTimeWithOffset(startedMs + (audit.durationMinutes ?? 30) * MINUTE_MS, audit.offsetMinutes)
      : null,
    scores: completed ? (audit.scores ?? { overall: null, aiCrawl: null, contentDecay: null, technical: null }) : null,
    issues,
  };
}
