/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core';
export type AuditSeverity =
  | 'CRITICAL'
  | 'INFO'
  | 'WARNING';

export type OrderDirection =
  | 'ASC'
  | 'DESC';

export type TrackedKeywordOrder = {
  direction: OrderDirection;
  field: TrackedKeywordOrderField;
};

export type TrackedKeywordOrderField =
  | 'CREATED_AT'
  /** Keyword text, by code point. */
  | 'KEYWORD'
  /** Newest position. 0 and null sort as 0, so with ASC unranked keywords come FIRST. Ties: keyword text, ascending by code point. */
  | 'POSITION'
  /** Search volume; null sorts as 0. Ties: keyword text, ascending by code point. */
  | 'SEARCH_VOLUME';

export type AiVisibilityQueryVariables = Exact<{
  organizationId: string;
  site: string;
}>;


export type AiVisibilityQuery = { organization: { siteLookup: Array<{ id: string, aiVisibility: { promptCounts: { active: number, paused: number }, rollups: Array<{ scoreBps: number, appearanceRate: number, shareOfVoice: number, computedAt: string }> } | null }> } | null };

export type KeywordsQueryVariables = Exact<{
  organizationId: string;
  site: string;
  rankedFirst: number;
  unrankedFirst: number;
}>;


export type KeywordsQuery = { organization: { siteLookup: Array<{ id: string, ranked: { edges: Array<{ node: { keyword: string, position: number | null, searchVolume: number | null, cluster: { label: string } | null } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } }, unranked: { edges: Array<{ node: { keyword: string, position: number | null, searchVolume: number | null, cluster: { label: string } | null } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } }> } | null };

export type KeywordsPageQueryVariables = Exact<{
  organizationId: string;
  siteId: string;
  first: number;
  after: string;
  ranked: boolean;
  orderBy: TrackedKeywordOrder;
}>;


export type KeywordsPageQuery = { organization: { site: { trackedKeywords: { edges: Array<{ node: { keyword: string, position: number | null, searchVolume: number | null, cluster: { label: string } | null } }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } } | null } | null };

export type LatestAuditQueryVariables = Exact<{
  organizationId: string;
  site: string;
}>;


export type LatestAuditQuery = { organization: { siteLookup: Array<{ id: string, auditRuns: { edges: Array<{ node: { id: string, completedAt: string | null, scores: { overall: number | null, aiCrawl: number | null, contentDecay: number | null, technical: number | null } | null, issueSummary: Array<{ severity: AuditSeverity, count: number }> } }> } }> } | null };

export type RankingsQueryVariables = Exact<{
  organizationId: string;
  site: string;
  startDate: string;
}>;


export type RankingsQuery = { organization: { siteLookup: Array<{ id: string, latest: { date: string, entries: Array<{ keywordId: string, keyword: string, position: number | null }> } | null, start: { date: string, entries: Array<{ keywordId: string, position: number | null }> } | null }> } | null };

export type ReadinessProbeQueryVariables = Exact<{ [key: string]: never; }>;


export type ReadinessProbeQuery = { __typename: 'Query' };

export class TypedDocumentString<TResult, TVariables>
  extends String
  implements DocumentTypeDecoration<TResult, TVariables>
{
  __apiType?: NonNullable<DocumentTypeDecoration<TResult, TVariables>['__apiType']>;
  private value: string;
  public __meta__?: Record<string, any> | undefined;

  constructor(value: string, __meta__?: Record<string, any> | undefined) {
    super(value);
    this.value = value;
    this.__meta__ = __meta__;
  }

  override toString(): string & DocumentTypeDecoration<TResult, TVariables> {
    return this.value;
  }
}

export const AiVisibilityDocument = new TypedDocumentString(`
    query AiVisibility($organizationId: ID!, $site: String!) {
  organization(id: $organizationId) {
    siteLookup(identifier: $site) {
      id
      aiVisibility {
        promptCounts {
          active
          paused
        }
        rollups(window: DAYS_30, first: 1) {
          scoreBps
          appearanceRate
          shareOfVoice
          computedAt
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<AiVisibilityQuery, AiVisibilityQueryVariables>;
export const KeywordsDocument = new TypedDocumentString(`
    query Keywords($organizationId: ID!, $site: String!, $rankedFirst: Int!, $unrankedFirst: Int!) {
  organization(id: $organizationId) {
    siteLookup(identifier: $site) {
      id
      ranked: trackedKeywords(
        first: $rankedFirst
        filter: {ranked: true}
        orderBy: {field: POSITION, direction: ASC}
      ) {
        edges {
          node {
            keyword
            position
            searchVolume
            cluster {
              label
            }
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
      unranked: trackedKeywords(
        first: $unrankedFirst
        filter: {ranked: false}
        orderBy: {field: KEYWORD, direction: ASC}
      ) {
        edges {
          node {
            keyword
            position
            searchVolume
            cluster {
              label
            }
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<KeywordsQuery, KeywordsQueryVariables>;
export const KeywordsPageDocument = new TypedDocumentString(`
    query KeywordsPage($organizationId: ID!, $siteId: ID!, $first: Int!, $after: String!, $ranked: Boolean!, $orderBy: TrackedKeywordOrder!) {
  organization(id: $organizationId) {
    site(id: $siteId) {
      trackedKeywords(
        first: $first
        after: $after
        filter: {ranked: $ranked}
        orderBy: $orderBy
      ) {
        edges {
          node {
            keyword
            position
            searchVolume
            cluster {
              label
            }
          }
        }
        pageInfo {
          hasNextPage
          endCursor
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<KeywordsPageQuery, KeywordsPageQueryVariables>;
export const LatestAuditDocument = new TypedDocumentString(`
    query LatestAudit($organizationId: ID!, $site: String!) {
  organization(id: $organizationId) {
    siteLookup(identifier: $site) {
      id
      auditRuns(status: COMPLETED, first: 1) {
        edges {
          node {
            id
            completedAt
            scores {
              overall
              aiCrawl
              contentDecay
              technical
            }
            issueSummary {
              severity
              count
            }
          }
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<LatestAuditQuery, LatestAuditQueryVariables>;
export const RankingsDocument = new TypedDocumentString(`
    query Rankings($organizationId: ID!, $site: String!, $startDate: Date!) {
  organization(id: $organizationId) {
    siteLookup(identifier: $site) {
      id
      latest: rankSnapshot {
        date
        entries {
          keywordId
          keyword
          position
        }
      }
      start: rankSnapshot(onOrBefore: $startDate) {
        date
        entries {
          keywordId
          position
        }
      }
    }
  }
}
    `) as unknown as TypedDocumentString<RankingsQuery, RankingsQueryVariables>;
export const ReadinessProbeDocument = new TypedDocumentString(`
    query ReadinessProbe {
  __typename
}
    `) as unknown as TypedDocumentString<ReadinessProbeQuery, ReadinessProbeQueryVariables>;