import { z } from 'zod';
import type { PlatformClient } from '../platform/platformClient.js';
import { documentedSchemas } from './documentedSchemas.js';
import { type QueryValues, queryReader, type RouteQuery } from './queryRules.js';

/** What a route's loader may use: the platform, scoped to the caller's organization. */
export interface LoadContext {
  readonly platform: PlatformClient;
  /** From the verified key alone; every platform query is scoped by it. */
  readonly organizationId: string;
}

export type CacheParams = Readonly<Record<string, string | number>>;

/** One request, parsed: its normalized params (the cache key) and the loader of their answer. */
export interface PreparedRequest {
  readonly params: CacheParams;
  load(context: LoadContext): Promise<unknown>;
}

/** What the OpenAPI document says about an operation besides its schemas. */
export interface OperationText {
  readonly operationId: string;
  readonly summary: string;
  readonly description: string;
}

/**
 * One public v1 route, declared once: its path, its query and its 200 `data` as zod
 * schemas (which parse, type and document it), and its loader.
 */
export interface RouteDeclaration<Q extends RouteQuery, D extends z.ZodType, P extends CacheParams>
  extends OperationText {
  readonly path: string;
  readonly query: Q;
  readonly data: D;
  /** The params the answer depends on: the parsed query, plus anything derived from the clock. */
  params(query: z.output<Q>, now: Date): P;
  load(context: LoadContext, params: P): Promise<z.output<D>>;
}

/** A declared route as the app and the document use it, whatever its own types. */
export interface PublicRoute extends OperationText {
  readonly path: string;
  readonly query: RouteQuery;
  readonly data: z.ZodType;
  /** The whole 200 body: `data` in the success envelope. */
  readonly envelope: z.ZodType;
  /**
   * Reads the query (the raw query string, and its parsed values when the string is not
   * plain), throwing ApiError for bad input. Two requests that mean the same thing get equal params.
   */
  prepare(querystring: string, values: () => QueryValues, now: Date): PreparedRequest;
}

export function defineRoute<Q extends RouteQuery, D extends z.ZodType, P extends CacheParams>(
  route: RouteDeclaration<Q, D, P>,
): PublicRoute {
  const { path, operationId, summary, description, query, data } = route;
  const envelope = z
    .object({
      data,
      meta: z.object({}).strict().describe('Always an empty object on success.'),
      errors: z.array(z.unknown()).max(0).describe('Always empty on success.'),
    })
    .strict()
    .register(documentedSchemas, { id: `${operationId.replace(/^get/, '')}Envelope`, description: summary });
  const readQuery = queryReader(query);
  return {
    path,
    operationId,
    summary,
    description,
    query,
    data,
    envelope,
    prepare(querystring, values, now) {
      const params = route.params(readQuery(querystring, values), now);
      return { params, load: (context) => route.load(context, params) };
    },
  };
}
