/**
 * The records the local platform serves, shaped after platform.graphql. Date-times keep
 * the offset they were written with (the platform may send any offset, not only Z).
 */

export type AuditRunStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
export type AuditSeverity = 'CRITICAL' | 'WARNING' | 'INFO';
export type RollupWindow = 'DAYS_7' | 'DAYS_30' | 'DAYS_90';

export interface PlatformData {
  readonly organizations: ReadonlyMap<string, OrganizationRecord>;
}

export interface OrganizationRecord {
  readonly id: string;
  readonly name: string;
  readonly sites: readonly SiteRecord[];
}

export interface SiteRecord {
  readonly id: string;
  readonly domain: string;
  readonly slug: string;
  readonly createdAt: string;
  /** Tracked keywords; `position` is the one of the newest rank check. */
  readonly keywords: readonly KeywordRecord[];
  /** Completed daily rank checks, oldest first; some days are missing. */
  readonly rankChecks: readonly RankCheckRecord[];
  /** null: AI visibility tracking was never set up. */
  readonly aiVisibility: AiVisibilityRecord | null;
  readonly auditRuns: readonly AuditRunRecord[];
}

export interface KeywordRecord {
  readonly id: string;
  readonly keyword: string;
  /** 0 or null: not ranked in the top 100. */
  readonly position: number | null;
  readonly searchVolume: number | null;
  readonly cluster: { readonly id: string; readonly label: string } | null;
  readonly createdAt: string;
}

export interface RankCheckRecord {
  /** YYYY-MM-DD, UTC. */
  readonly date: string;
  readonly entries: readonly RankEntryRecord[];
}

export interface RankEntryRecord {
  readonly keywordId: string;
  readonly keyword: string;
  readonly position: number | null;
}

export interface AiVisibilityRecord {
  readonly id: string;
  readonly createdAt: string;
  readonly promptCounts: { readonly active: number; readonly paused: number; readonly archived: number };
  readonly rollups: readonly RollupRecord[];
}

export interface RollupRecord {
  readonly window: RollupWindow;
  readonly scoreBps: number;
  readonly appearanceRate: number;
  readonly shareOfVoice: number;
  readonly computedAt: string;
}

export interface AuditRunRecord {
  readonly id: string;
  readonly status: AuditRunStatus;
  readonly startedAt: string;
  readonly completedAt: string | null;
  readonly scores: {
    readonly overall: number | null;
    readonly aiCrawl: number | null;
    readonly contentDecay: number | null;
    readonly technical: number | null;
  } | null;
  readonly issues: readonly AuditIssueRecord[];
}

export interface AuditIssueRecord {
  readonly id: string;
  readonly severity: AuditSeverity;
  readonly title: string;
  readonly pageUrl: string;
}
