import type { PlatformData, SiteRecord } from '../../src/local/seedData.js';

/**
 * What each public route must answer for the local platform's data, worked out from the
 * records themselves by the spec's rules (and platform.graphql's orderings), without the
 * gateway's mappers: the end-to-end tests compare the gateway's real answers with these.
 */

const DAY_MS = 86_400_000;

/** Unicode code point order, as the platform sorts keyword text (not UTF-16 code units). */
function byCodePoint(a: string, b: string): number {
  const left = [...a].map((c) => c.codePointAt(0) ?? 0);
  const right = [...b].map((c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const diff = (left[i] ?? 0) - (right[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return left.length - right.length;
}

/** 0 and null both mean "not ranked in the top 100"; the public API says null. */
function publicPosition(position: number | null): number | null {
  return position !== null && position > 0 ? position : null;
}

/** The one site of the organization with this exact domain (the test names domains, never slugs). */
export function siteOf(data: PlatformData, organizationId: string, domain: string): SiteRecord {
  const site = data.organizations.get(organizationId)?.sites.find((s) => s.domain === domain);
  if (!site) throw new Error(`no seeded site ${domain} in ${organizationId}`);
  return site;
}

/** Keywords: ranked ones by position (ties by text), then unranked ones by text; `limit` of them. */
export function expectedKeywords(site: SiteRecord, asGiven: string, limit: number) {
  const rows = site.keywords.map((k) => {
    const position = publicPosition(k.position);
    return {
      keyword: k.keyword,
      position,
      unranked: position === null,
      volume: k.searchVolume,
      clusterLabel: k.cluster?.label ?? null,
    };
  });
  const ranked = rows
    .filter((r) => r.position !== null)
    .sort((a, b) => (a.position ?? 0) - (b.position ?? 0) || byCodePoint(a.keyword, b.keyword));
  const unranked = rows.filter((r) => r.position === null).sort((a, b) => byCodePoint(a.keyword, b.keyword));
  return { site: asGiven, keywords: [...ranked, ...unranked].slice(0, limit) };
}

/**
 * Rankings over `days` days before `todayMs`: the newest check against the newest check on
 * or before the window's start; keywords whose public position changed, largest move first
 * (an unranked side counts as position 101), ties by text.
 */
export function expectedRankings(site: SiteRecord, asGiven: string, days: number, limit: number, todayMs: number) {
  const startDate = new Date(todayMs - days * DAY_MS).toISOString().slice(0, 10);
  const latest = site.rankChecks.at(-1);
  const start = [...site.rankChecks].reverse().find((check) => check.date <= startDate);
  const from = new Map((start?.entries ?? []).map((e) => [e.keywordId, publicPosition(e.position)]));
  const movers = (latest?.entries ?? [])
    .map((e) => ({ keyword: e.keyword, from: from.get(e.keywordId) ?? null, to: publicPosition(e.position) }))
    .filter((m) => m.from !== m.to)
    .map((m) => ({ ...m, delta: m.from !== null && m.to !== null ? m.from - m.to : null }))
    .sort(
      (a, b) =>
        Math.abs((b.from ?? 101) - (b.to ?? 101)) - Math.abs((a.from ?? 101) - (a.to ?? 101)) ||
        byCodePoint(a.keyword, b.keyword),
    );
  return { site: asGiven, days, movers: movers.slice(0, limit) };
}

/** The newest 30-day rollup (by instant, whatever the offset) and the prompt counts. */
export function expectedAiVisibility(site: SiteRecord, asGiven: string) {
  const program = site.aiVisibility;
  if (program === null) return { site: asGiven, setup_required: true, reason: 'no_ai_visibility' };
  const newest = program.rollups
    .filter((r) => r.window === 'DAYS_30')
    .sort((a, b) => Date.parse(b.computedAt) - Date.parse(a.computedAt))[0];
  return {
    site: asGiven,
    ai_visibility: {
      score: newest ? newest.scoreBps / 10_000 : null,
      activePrompts: program.promptCounts.active,
      pausedPrompts: program.promptCounts.paused,
      summary: {
        appearanceRate: newest?.appearanceRate ?? null,
        shareOfVoice: newest?.shareOfVoice ?? null,
        computedAt: newest ? new Date(Date.parse(newest.computedAt)).toISOString() : null,
      },
    },
  };
}

/** The newest COMPLETED run by start instant (running, failed and queued ones are passed over). */
export function expectedAudit(site: SiteRecord, asGiven: string) {
  const run = site.auditRuns
    .filter((r) => r.status === 'COMPLETED')
    .sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt))[0];
  if (!run || run.completedAt === null) return { site: asGiven, setup_required: true, reason: 'no_audit' };
  const count = (severity: string) => run.issues.filter((i) => i.severity === severity).length;
  return {
    site: asGiven,
    audit: {
      latestRun: {
        id: run.id,
        completedAt: new Date(Date.parse(run.completedAt)).toISOString(),
        scores: {
          overall: run.scores?.overall ?? null,
          aiCrawl: run.scores?.aiCrawl ?? null,
          decay: run.scores?.contentDecay ?? null,
          technical: run.scores?.technical ?? null,
        },
      },
      issueCounts: { critical: count('CRITICAL'), warn: count('WARNING'), info: count('INFO') },
    },
  };
}

/** Midnight (UTC) of the day of `ms`. */
export function utcDayStart(ms: number): number {
  const d = new Date(ms);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
}
