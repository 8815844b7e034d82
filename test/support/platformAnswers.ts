import type { TypedDocumentString } from '../../src/generated/graphql.js';
import type { PlatformClient } from '../../src/platform/platformClient.js';

/** The `data` of a Keywords answer for one site with one ranked keyword. */
export function keywordsData(keyword = 'seo', position = 3): Record<string, unknown> {
  return {
    organization: {
      siteLookup: [
        {
          id: 'site_1',
          ranked: {
            totalCount: 1,
            edges: [{ node: { keyword, position, searchVolume: 10, cluster: { label: 'core' } } }],
            pageInfo: { hasNextPage: false, endCursor: null },
          },
          unranked: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
        },
      ],
    },
  };
}

/** A Keywords answer for one site that tracks no keyword yet. */
export const EMPTY_KEYWORDS = {
  data: {
    organization: {
      siteLookup: [
        {
          id: 'site_1',
          ranked: { totalCount: 0, edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
          unranked: { edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
        },
      ],
    },
  },
};

export interface PlatformCall {
  readonly operation: string;
  readonly variables: Record<string, unknown>;
}

export interface StubPlatform extends PlatformClient {
  readonly calls: PlatformCall[];
}

/**
 * A platform client that answers from a function, without HTTP: for tests about
 * what happens around the platform (limits, cache), counting every call.
 */
export function stubPlatform(answer: (call: PlatformCall) => unknown): StubPlatform {
  const calls: PlatformCall[] = [];
  return {
    calls,
    async request<TResult, TVariables extends Record<string, unknown>>(
      document: TypedDocumentString<TResult, TVariables>,
      variables: TVariables,
    ): Promise<TResult> {
      const call = { operation: operationName(document), variables };
      calls.push(call);
      return (await answer(call)) as TResult;
    },
  };
}

function operationName(document: TypedDocumentString<unknown, never>): string {
  return /^\s*query\s+(\w+)/.exec(document.toString())?.[1] ?? 'anonymous';
}
