import { GraphQLError } from 'graphql';
import type { AuditSeverity, TrackedKeywordOrder, TrackedKeywordOrderField } from '../generated/graphql.js';
import { compareCodePoints } from '../mappers/codePointOrder.js';
import { type AuditRunStatus, type PlatformData, type RollupWindow, SEVERITIES, type SiteRecord } from './seedData.js';

/**
 * The resolvers of the embedded stand-in for the platform, as plain objects: graphql's default
 * resolver reads a property, or calls a function of that name with the field's arguments. Each
 * argument follows the schema's comments to the letter; the gateway depends on them.
 */

/** The platform refuses larger pages with BAD_USER_INPUT. */
const PAGE_MAX = 200;

type OrganizationRecord = NonNullable<ReturnType<PlatformData['organizations']['get']>>;
type KeywordRecord = SiteRecord['keywords'][number];
type AuditRunRecord = SiteRecord['auditRuns'][number];
type AiVisibilityRecord = NonNullable<SiteRecord['aiVisibility']>;
type PageArgs = { first?: number | null; after?: string | null };
type KeywordArgs = PageArgs & { filter?: { ranked?: boolean | null } | null; orderBy?: TrackedKeywordOrder | null };

export function rootValue(data: PlatformData): { organization(args: { id: string }): unknown } {
  const nodes = new Map([...data.organizations].map(([id, record]) => [id, organizationNode(record)]));
  return { organization: ({ id }) => nodes.get(id) ?? null };
}

function organizationNode(record: OrganizationRecord) {
  const sites = record.sites.map(siteNode);
  return {
    ...record,
    /** Domain: ASCII case-insensitive; slug: exact. Slugs are not unique. */
    siteLookup: ({ identifier }: { identifier: string }) =>
      sites.filter((site) => asciiLowerCase(site.domain) === asciiLowerCase(identifier) || site.slug === identifier),
    site: ({ id }: { id: string }) => sites.find((site) => site.id === id) ?? null,
  };
}

function siteNode(record: SiteRecord) {
  /** Keywords sorted per order and filter, computed once: the data never changes. */
  const orderings = new Map<string, KeywordRecord[]>();
  /** Newest first by startedAt (an instant: offsets differ). */
  const runs = [...record.auditRuns]
    .sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt) || compareCodePoints(a.id, b.id))
    .map(auditRunNode);
  const program = record.aiVisibility && aiVisibilityNode(record.aiVisibility);
  return {
    ...record,
    /** The newest check on or before the date (none given: the newest of all); null when none. */
    rankSnapshot: ({ onOrBefore }: { onOrBefore?: string | null }) =>
      record.rankChecks.findLast((check) => onOrBefore == null || check.date <= onOrBefore) ?? null,
    trackedKeywords(args: KeywordArgs) {
      const order: TrackedKeywordOrder = args.orderBy ?? { field: 'CREATED_AT', direction: 'ASC' };
      const ranked = args.filter?.ranked ?? null;
      const scope = `kw:${record.id}:${order.field}:${order.direction}:${ranked ?? '*'}`;
      let list = orderings.get(scope);
      if (!list) {
        list = record.keywords.filter((k) => ranked === null || ranked === rankOf(k.position) > 0);
        orderings.set(scope, list.sort(keywordOrder(order)));
      }
      return { ...connection(list, args, 50, scope), totalCount: list.length };
    },
    aiVisibility: () => program,
    /** Optionally one status only. */
    auditRuns(args: PageArgs & { status?: AuditRunStatus | null }) {
      const status = args.status ?? null;
      const scope = `runs:${record.id}:${status ?? '*'}`;
      return connection(status === null ? runs : runs.filter((run) => run.status === status), args, 10, scope);
    },
  };
}

function aiVisibilityNode(record: AiVisibilityRecord) {
  const newestFirst = [...record.rollups].sort((a, b) => Date.parse(b.computedAt) - Date.parse(a.computedAt));
  return {
    ...record,
    /** The window's rollups, newest first by instant. */
    rollups: ({ window, first }: { window: RollupWindow; first?: number | null }) =>
      newestFirst.filter((rollup) => rollup.window === window).slice(0, pageSize(first, 1)),
  };
}

function auditRunNode(record: AuditRunRecord) {
  const countOf = (severity: AuditSeverity) => record.issues.filter((issue) => issue.severity === severity).length;
  return {
    ...record,
    /** One row per severity with at least one finding; none for a severity without. */
    issueSummary: () =>
      SEVERITIES.map((severity) => ({ severity, count: countOf(severity) })).filter((row) => row.count > 0),
    issues(args: PageArgs & { severity?: AuditSeverity | null }) {
      const severity = args.severity ?? null;
      const issues = severity === null ? record.issues : record.issues.filter((i) => i.severity === severity);
      return connection(issues, args, 50, `issues:${record.id}:${severity ?? '*'}`);
    },
  };
}

/** 0 and null: not ranked in the top 100; both count as 0 when ordering. */
const rankOf = (position: number | null): number => (position !== null && position > 0 ? position : 0);

/** ASCII-only lower case: the schema folds A–Z and nothing else. */
const asciiLowerCase = (text: string): string => text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());

/** The schema's orderings: POSITION counts 0 and null as 0 (unranked FIRST with ASC), SEARCH_VOLUME null as 0. */
const DIFFERENCE: Readonly<Record<TrackedKeywordOrderField, (a: KeywordRecord, b: KeywordRecord) => number>> = {
  POSITION: (a, b) => rankOf(a.position) - rankOf(b.position),
  SEARCH_VOLUME: (a, b) => (a.searchVolume ?? 0) - (b.searchVolume ?? 0),
  KEYWORD: (a, b) => compareCodePoints(a.keyword, b.keyword),
  CREATED_AT: (a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt),
};

/** Ties go by keyword text ascending by code point, whatever the direction; the id settles the rest. */
function keywordOrder({ field, direction }: TrackedKeywordOrder): (a: KeywordRecord, b: KeywordRecord) => number {
  const sign = direction === 'ASC' ? 1 : -1;
  return (a, b) =>
    sign * DIFFERENCE[field](a, b) || compareCodePoints(a.keyword, b.keyword) || compareCodePoints(a.id, b.id);
}

const badUserInput = (message: string) => new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });

function pageSize(first: number | null | undefined, fallback: number): number {
  const size = first ?? fallback;
  if (size > PAGE_MAX) throw badUserInput(`first must be at most ${PAGE_MAX}, got ${size}`);
  if (size < 0) throw badUserInput(`first must not be negative, got ${size}`);
  return size;
}

/** One Relay page of `rows` after the cursor; cursors are made only when a query selects them. */
function connection<R extends { id: string }>(rows: readonly R[], args: PageArgs, defaultFirst: number, scope: string) {
  const first = pageSize(args.first, defaultFirst);
  const start = startAfter(args.after, scope, rows);
  const page = rows.slice(start, start + first);
  const last = page.at(-1);
  return {
    edges: page.map((node) => ({ cursor: () => encodeCursor(scope, node.id), node })),
    pageInfo: {
      hasNextPage: start + page.length < rows.length,
      endCursor: last === undefined ? null : encodeCursor(scope, last.id),
    },
  };
}

/** A cursor names the list it came from and the row it points at. */
const encodeCursor = (scope: string, id: string) => Buffer.from(JSON.stringify([scope, id])).toString('base64url');

/** The index after the cursor's row; 0 without a cursor. A cursor of another list is refused. */
function startAfter(after: string | null | undefined, scope: string, rows: readonly { id: string }[]): number {
  if (after == null) return 0;
  let decoded: unknown = null;
  try {
    decoded = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'));
  } catch {}
  const index = Array.isArray(decoded) && decoded[0] === scope ? rows.findIndex((row) => row.id === decoded[1]) : -1;
  if (index < 0) throw badUserInput('after is not a cursor of this list');
  return index + 1;
}
