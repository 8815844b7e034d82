import { GraphQLError } from 'graphql';
import { compareCodePoints } from '../mappers/codePointOrder.js';
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

/**
 * The resolvers of platform.graphql as plain classes: graphql's default field resolver
 * reads a property or calls a method of the same name with the field's arguments. Each
 * argument follows the schema's comments to the letter; the gateway depends on them.
 */

/** The platform refuses larger pages with BAD_USER_INPUT. */
export const PAGE_MAX = 200;

type OrderField = 'POSITION' | 'SEARCH_VOLUME' | 'KEYWORD' | 'CREATED_AT';
type Direction = 'ASC' | 'DESC';

interface Connection<T> {
  edges: Array<{ cursor: string; node: T }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export function rootValue(data: PlatformData): { organization(args: { id: string }): OrganizationNode | null } {
  const nodes = new Map<string, OrganizationNode>();
  for (const [id, record] of data.organizations) nodes.set(id, new OrganizationNode(record));
  return { organization: ({ id }) => nodes.get(id) ?? null };
}

class OrganizationNode {
  readonly id: string;
  readonly name: string;
  private readonly sites: SiteNode[];

  constructor(record: OrganizationRecord) {
    this.id = record.id;
    this.name = record.name;
    this.sites = record.sites.map((site) => new SiteNode(site));
  }

  /** Domain: ASCII case-insensitive; slug: exact. Slugs are not unique. */
  siteLookup({ identifier }: { identifier: string }): SiteNode[] {
    const asDomain = asciiLowerCase(identifier);
    return this.sites.filter((site) => asciiLowerCase(site.domain) === asDomain || site.slug === identifier);
  }

  site({ id }: { id: string }): SiteNode | null {
    return this.sites.find((site) => site.id === id) ?? null;
  }
}

class SiteNode {
  readonly id: string;
  readonly domain: string;
  readonly slug: string;
  readonly createdAt: string;
  private readonly record: SiteRecord;
  /** Keywords sorted per order and filter, computed once: the data never changes. */
  private readonly orderings = new Map<string, { list: KeywordRecord[]; indexById: Map<string, number> }>();
  private readonly runsNewestFirst: AuditRunRecord[];
  private readonly program: AiVisibilityNode | null;

  constructor(record: SiteRecord) {
    this.record = record;
    this.id = record.id;
    this.domain = record.domain;
    this.slug = record.slug;
    this.createdAt = record.createdAt;
    this.runsNewestFirst = [...record.auditRuns].sort(
      (a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt) || compareCodePoints(a.id, b.id),
    );
    this.program = record.aiVisibility === null ? null : new AiVisibilityNode(record.aiVisibility);
  }

  /** The newest check on or before the date (none given: the newest of all); null when none. */
  rankSnapshot({ onOrBefore }: { onOrBefore?: string | null }): RankCheckRecord | null {
    const checks = this.record.rankChecks;
    for (let i = checks.length - 1; i >= 0; i--) {
      const check = checks[i];
      if (check && (onOrBefore === undefined || onOrBefore === null || check.date <= onOrBefore)) return check;
    }
    return null;
  }

  trackedKeywords(args: {
    first?: number | null;
    after?: string | null;
    filter?: { ranked?: boolean | null } | null;
    orderBy?: { field: OrderField; direction: Direction } | null;
  }): Connection<KeywordRecord> & { totalCount: number } {
    const first = pageSize(args.first, 50);
    const field = args.orderBy?.field ?? 'CREATED_AT';
    const direction = args.orderBy?.direction ?? 'ASC';
    const ranked = args.filter?.ranked ?? null;
    const scope = `kw:${this.id}:${field}:${direction}:${ranked === null ? '*' : String(ranked)}`;
    const { list, indexById } = this.ordering(scope, field, direction, ranked);
    const start = startAfter(args.after, scope, indexById);
    return { ...connection(list, start, first, scope, (keyword) => keyword), totalCount: list.length };
  }

  aiVisibility(): AiVisibilityNode | null {
    return this.program;
  }

  /** Newest first by startedAt (an instant: offsets differ), optionally one status only. */
  auditRuns(args: {
    status?: AuditRunStatus | null;
    first?: number | null;
    after?: string | null;
  }): Connection<AuditRunNode> {
    const first = pageSize(args.first, 10);
    const status = args.status ?? null;
    const scope = `runs:${this.id}:${status ?? '*'}`;
    const runs = status === null ? this.runsNewestFirst : this.runsNewestFirst.filter((run) => run.status === status);
    const start = startAfter(args.after, scope, new Map(runs.map((run, index) => [run.id, index])));
    return connection(runs, start, first, scope, (run) => new AuditRunNode(run));
  }

  private ordering(scope: string, field: OrderField, direction: Direction, ranked: boolean | null) {
    const known = this.orderings.get(scope);
    if (known) return known;
    const list = this.record.keywords
      .filter((keyword) => ranked === null || isRanked(keyword.position) === ranked)
      .sort(keywordOrder(field, direction));
    const ordering = { list, indexById: new Map(list.map((keyword, index) => [keyword.id, index])) };
    this.orderings.set(scope, ordering);
    return ordering;
  }
}

class AiVisibilityNode {
  readonly id: string;
  readonly createdAt: string;
  readonly promptCounts: AiVisibilityRecord['promptCounts'];
  private readonly newestFirst: RollupRecord[];

  constructor(record: AiVisibilityRecord) {
    this.id = record.id;
    this.createdAt = record.createdAt;
    this.promptCounts = record.promptCounts;
    this.newestFirst = [...record.rollups].sort((a, b) => Date.parse(b.computedAt) - Date.parse(a.computedAt));
  }

  /** The window's rollups, newest first by instant. */
  rollups({ window, first }: { window: RollupWindow; first?: number | null }): RollupRecord[] {
    return this.newestFirst.filter((rollup) => rollup.window === window).slice(0, pageSize(first, 1));
  }
}

const SEVERITY_ORDER: readonly AuditSeverity[] = ['CRITICAL', 'WARNING', 'INFO'];

class AuditRunNode {
  readonly id: string;
  readonly status: AuditRunStatus;
  readonly startedAt: string;
  readonly completedAt: string | null;
  readonly scores: AuditRunRecord['scores'];
  private readonly record: AuditRunRecord;

  constructor(record: AuditRunRecord) {
    this.record = record;
    this.id = record.id;
    this.status = record.status;
    this.startedAt = record.startedAt;
    this.completedAt = record.completedAt;
    this.scores = record.scores;
  }

  /** One row per severity with at least one finding; none for a severity without. */
  issueSummary(): Array<{ severity: AuditSeverity; count: number }> {
    return SEVERITY_ORDER.map((severity) => ({
      severity,
      count: this.record.issues.filter((issue) => issue.severity === severity).length,
    })).filter((row) => row.count > 0);
  }

  issues(args: {
    first?: number | null;
    after?: string | null;
    severity?: AuditSeverity | null;
  }): Connection<AuditIssueRecord> {
    const first = pageSize(args.first, 50);
    const severity = args.severity ?? null;
    const scope = `issues:${this.id}:${severity ?? '*'}`;
    const issues = severity === null ? this.record.issues : this.record.issues.filter((i) => i.severity === severity);
    const start = startAfter(args.after, scope, new Map(issues.map((issue, index) => [issue.id, index])));
    return connection(issues, start, first, scope, (issue) => issue);
  }
}

function isRanked(position: number | null): boolean {
  return position !== null && position >= 1;
}

/** ASCII-only lower case: the schema folds A–Z and nothing else. */
function asciiLowerCase(text: string): string {
  return text.replace(/[A-Z]/g, (letter) => String.fromCharCode(letter.charCodeAt(0) + 32));
}

/**
 * The schema's orderings. POSITION: 0 and null count as 0 (unranked FIRST with ASC);
 * SEARCH_VOLUME: null counts as 0; both tie on keyword text ascending by code point,
 * whatever the direction. The id settles anything left, so pages never overlap.
 */
function keywordOrder(field: OrderField, direction: Direction): (a: KeywordRecord, b: KeywordRecord) => number {
  const sign = direction === 'ASC' ? 1 : -1;
  const byText = (a: KeywordRecord, b: KeywordRecord) =>
    compareCodePoints(a.keyword, b.keyword) || compareCodePoints(a.id, b.id);
  switch (field) {
    case 'POSITION':
      return (a, b) => sign * (sortablePosition(a.position) - sortablePosition(b.position)) || byText(a, b);
    case 'SEARCH_VOLUME':
      return (a, b) => sign * ((a.searchVolume ?? 0) - (b.searchVolume ?? 0)) || byText(a, b);
    case 'KEYWORD':
      return (a, b) => sign * compareCodePoints(a.keyword, b.keyword) || compareCodePoints(a.id, b.id);
    case 'CREATED_AT':
      return (a, b) => sign * (Date.parse(a.createdAt) - Date.parse(b.createdAt)) || byText(a, b);
  }
}

function sortablePosition(position: number | null): number {
  return position !== null && position > 0 ? position : 0;
}

function badUserInput(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

function pageSize(first: number | null | undefined, fallback: number): number {
  const size = first ?? fallback;
  if (size > PAGE_MAX) throw badUserInput(`first must be at most ${PAGE_MAX}, got ${size}`);
  if (size < 0) throw badUserInput(`first must not be negative, got ${size}`);
  return size;
}

/** One Relay page of `rows` from `start`; cursors are made only when a query selects them. */
function connection<R extends { id: string }, N>(
  rows: readonly R[],
  start: number,
  first: number,
  scope: string,
  toNode: (row: R) => N,
): Connection<N> {
  const page = rows.slice(start, start + first);
  const last = page[page.length - 1];
  return {
    edges: page.map((row) => new Edge(scope, row.id, toNode(row))),
    pageInfo: {
      hasNextPage: start + page.length < rows.length,
      endCursor: last === undefined ? null : encodeCursor(scope, last.id),
    },
  };
}

class Edge<N> {
  constructor(
    private readonly scope: string,
    private readonly id: string,
    readonly node: N,
  ) {}

  get cursor(): string {
    return encodeCursor(this.scope, this.id);
  }
}

/** A cursor names the list it came from and the row it points at. */
function encodeCursor(scope: string, id: string): string {
  return Buffer.from(JSON.stringify([scope, id]), 'utf8').toString('base64url');
}

/** The index after the cursor's row; 0 without a cursor. A cursor of another list is refused. */
function startAfter(after: string | null | undefined, scope: string, indexById: ReadonlyMap<string, number>): number {
  if (after === undefined || after === null) return 0;
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {
    decoded = null;
  }
  if (Array.isArray(decoded) && decoded[0] === scope && typeof decoded[1] === 'string') {
    const index = indexById.get(decoded[1]);
    if (index !== undefined) return index + 1;
  }
  throw badUserInput('after is not a cursor of this list');
}
