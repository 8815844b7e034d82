import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { cacheControlField, cacheStatusField, matchesIfNoneMatch } from '../cache/cacheFields.js';
import { ApiError, UpstreamError } from '../errors.js';
import type { Services } from '../services.js';
import type { PublicRoute } from './publicRoute.js';

/**
 * parse → cache (scoped to the caller's organization) → load → send. Routes stay
 * declarative; everything they share lives here.
 */
export function handleRoute<P extends Record<string, string | number>>(
  route: PublicRoute<P>,
  services: Pick<Services, 'cache' | 'platform' | 'now' | 'metrics'>,
): Middleware<AppState> {
  return async (ctx) => {
    const principal = ctx.state.principal;
    if (!principal) throw new ApiError('INTERNAL', 'An internal error occurred.');
    const params = route.parse(ctx.query, services.now());
    const organizationId = principal.organizationId;
    // The organization leads the key: no two organizations can ever share an entry.
    const key = `${organizationId}\u0000${route.path}\u0000${JSON.stringify(params)}`;
    const result = await services.cache.get(key, () =>
      route.load({ platform: services.platform, organizationId }, params).catch(asPlatformFailure),
    );
    services.metrics?.cacheLookup(result.status);
    const { answer } = result;
    const ttlSeconds = services.cache.ttlSeconds;
    ctx.set('ETag', answer.etag);
    ctx.set('Cache-Control', cacheControlField(ttlSeconds));
    // The answer depends on the organization behind the key, whichever header carried it.
    ctx.vary(['Authorization', 'X-API-Key']);
    ctx.set('Cache-Status', cacheStatusField(result, ttlSeconds));
    if (ttlSeconds > 0 && result.status !== 'miss') ctx.set('Age', String(result.ageSeconds ?? 0));
    if (matchesIfNoneMatch(ctx.get('If-None-Match') || undefined, answer.etag)) {
      // Unchanged: the caller's copy stands. Still a successful call, so still counted.
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = answer.body;
  };
}

/** An answer the mappers could not read is the platform's fault: 502, never a 500 with details. */
function asPlatformFailure(err: unknown): never {
  if (err instanceof ApiError || err instanceof UpstreamError) throw err;
  const detail = err instanceof Error ? err.message : String(err);
  throw new UpstreamError('platform', 'bad_answer', `unreadable answer: ${detail}`);
}
