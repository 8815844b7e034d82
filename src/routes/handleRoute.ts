import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { Principal } from '../auth/principal.js';
import { cacheKeyFor } from '../cache/answerKey.js';
import { cacheControlField, cacheStatusField, matchesIfNoneMatch } from '../cache/cacheFields.js';
import { ApiError, UpstreamError } from '../errors.js';
import type { Services } from '../services.js';
import { inSpan, tracingOn } from '../telemetry/spans.js';
import type { PublicRoute } from './publicRoute.js';

const JSON_TYPE = 'application/json; charset=utf-8';

/** `now`: the request's moment, as the limit took it (one clock reading per request). */
export type RouteHandler = (ctx: ParameterizedContext<AppState>, principal: Principal, now: Date) => Promise<void>;

/**
 * parse → cache (scoped to the caller's organization) → load → send. Routes stay
 * declarative; everything they share lives here.
 */
export function handleRoute(
  route: PublicRoute,
  services: Pick<Services, 'cache' | 'platform' | 'metrics'>,
): RouteHandler {
  const { cache, platform, metrics } = services;
  const ttlSeconds = cache.ttlSeconds;
  const cacheControl = cacheControlField(ttlSeconds);
  return async (ctx, principal, now) => {
    const request = route.prepare(ctx.querystring, () => ctx.query, now);
    const organizationId = principal.organizationId;
    // The organization leads the key: no two organizations can ever share an entry.
    const { key, site } = cacheKeyFor(organizationId, route.path, request.params);
    const load = () => request.load({ platform, organizationId }).catch(asPlatformFailure);
    // Untraced, the lookup is awaited directly: no span to hold, no extra async step.
    const result = tracingOn()
      ? await inSpan('cache', async (span) => {
          const found = await cache.get(key, load, site);
          span.setAttribute('cache.result', found.status);
          return found;
        })
      : await cache.get(key, load, site);
    metrics?.cacheLookup(result.status);
    const { answer } = result;
    const res = ctx.res;
    res.setHeader('ETag', answer.etag);
    res.setHeader('Cache-Control', cacheControl);
    res.setHeader('Cache-Status', cacheStatusField(result, ttlSeconds));
    if (ttlSeconds > 0 && result.status !== 'miss') res.setHeader('Age', String(result.ageSeconds ?? 0));
    const ifNoneMatch = ctx.req.headers['if-none-match'];
    if (ifNoneMatch !== undefined && matchesIfNoneMatch(ifNoneMatch, answer.etag)) {
      // Unchanged: the caller's copy stands. Still a successful call, so still counted.
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    res.setHeader('Content-Type', JSON_TYPE);
    ctx.body = answer.body;
  };
}

/** An answer the mappers could not read is the platform's fault: 502, never a 500 with details. */
function asPlatformFailure(err: unknown): never {
  if (err instanceof ApiError || err instanceof UpstreamError) throw err;
  const detail = err instanceof Error ? err.message : String(err);
  throw new UpstreamError('platform', 'bad_answer', `unreadable answer: ${detail}`);
}
