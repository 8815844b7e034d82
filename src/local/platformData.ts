/**
 * The records the embedded stand-in for the platform serves, shaped after platform.graphql.
 * Date-times keep the offset they were written with (the platform may send any offset, not
 * only Z). Nothing changes them once seeded.
 */

export type AuditRunStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type AuditSeverity = 'CRITICAL' | 'WARNING' | 'INFO';
export type RollupWindow = 'DAYS_7' | 'DAYS_30' | 'DAYS_90';

export type PlatformData = { organizations: ReadonlyMap<string, OrganizationRecord> };
export type OrganizationRecord = { id: string; name: string; sites: SiteRecord[] };

export interface SiteRecord {
  id: string;
  domain: string;
  slug: string;
  createdAt: string;
  /** Tracked keywords; `position` is the one of the newest rank check. */
  keywords: KeywordRecord[];
  /** Completed daily rank checks, oldest first; some days are missing. */
  rankChecks: RankCheckRecord[];
  /** null: AI visibility tracking was never set up. */
  aiVisibility: AiVisibilityRecord | null;
  auditRuns: AuditRunRecord[];
}

export interface KeywordRecord {
  id: string;
  keyword: string;
  /** 0 or null: not ranked in the top 100. */
  position: number | null;
  searchVolume: number | null;
  cluster: { id: string; label: string } | null;
  createdAt: string;
}

/** `date`: YYYY-MM-DD, UTC. */
export type RankCheckRecord = { date: string; entries: RankEntryRecord[] };
export type RankEntryRecord = { keywordId: string; keyword: string; position: number | null };

export interface AiVisibilityRecord {
  id: string;
  createdAt: string;
  promptCounts: { active: number; paused: number; archived: number };
  rollups: RollupRecord[];
}

export interface RollupRecord {
  window: RollupWindow;
  scoreBps: number;
  appearanceRate: number;
  shareOfVoice: number;
  computedAt: string;
}

type Score = number | null;

export interface AuditRunRecord {
  id: string;
  status: AuditRunStatus;
  startedAt: string;
  completedAt: string | null;
  scores: { overall: Score; aiCrawl: Score; contentDecay: Score; technical: Score } | null;
  issues: AuditIssueRecord[];
}

export type AuditIssueRecord = { id: string; severity: AuditSeverity; title: string; pageUrl: string };
