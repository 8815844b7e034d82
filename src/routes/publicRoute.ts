import type { PlatformClient } from '../platform/platformClient.js';
import type { QueryValues } from './queryParams.js';

/** What a route's loader may use: the platform, scoped to the caller's organization. */
export interface LoadContext {
  readonly platform: PlatformClient;
  /** From the verified key alone; every platform query is scoped by it. */
  readonly organizationId: string;
}

/**
 * One public v1 route: parse the query (throwing ApiError for bad input), then load
 * the payload. The normalized params are the cache key, so two requests that mean
 * the same thing share one answer.
 */
export interface PublicRoute<P extends Record<string, string | number>> {
  readonly path: string;
  parse(query: QueryValues, now: Date): P;
  load(context: LoadContext, params: P): Promise<unknown>;
}

export function defineRoute<P extends Record<string, string | number>>(route: PublicRoute<P>): PublicRoute<P> {
  return route;
}
