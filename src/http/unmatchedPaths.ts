import type { RouterContext } from '@koa/router';
import type { Next } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';

/** Every route the gateway serves is a GET (which answers HEAD too). */
export const ALLOW = 'GET, HEAD';

/** For the router's allowedMethods: a known path asked with another method. */
export function methodNotAllowed(): ApiError {
  return new ApiError('METHOD_NOT_ALLOWED', 'This method is not allowed here; use GET.', {
    reason: 'method_not_allowed',
    headers: { Allow: ALLOW },
  });
}

/**
 * The one fallback, before the router: when nothing downstream answered, 404. A 405 is labelled
 * with the pattern of the route whose path matched (metrics, log). OPTIONS on a known path gets
 * the same `Allow` as its 405 (the router would list its methods in the order they were added).
 */
export function routeNotFound() {
  return async (ctx: RouterContext<AppState>, next: Next): Promise<void> => {
    try {
      await next();
    } catch (err: unknown) {
      if (err instanceof ApiError && err.status === 405 && ctx.state.route === undefined) {
        const pattern = ctx.matched?.find((layer) => layer.methods.length > 0)?.path;
        if (typeof pattern === 'string') ctx.state.route = pattern;
      }
      throw err;
    }
    if (ctx.method === 'OPTIONS' && ctx.response.get('Allow')) ctx.set('Allow', ALLOW);
    if (ctx.status !== 404 || ctx.body !== undefined) return;
    throw new ApiError('NOT_FOUND', 'No such route. The v1 routes are listed at /v1/openapi.json.', {
      reason: 'route_not_found',
    });
  };
}
