import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';

const ALLOW = 'GET, HEAD';

/**
 * Runs when no route matched. A known path asked with another method is 405 with
 * Allow; anything else is 404. Both answer before authentication: they say nothing
 * about any organization.
 */
export function unmatchedPaths(knownPaths: readonly string[]): Middleware<AppState> {
  const known = new Set(knownPaths.map(withoutTrailingSlash));
  return async (ctx) => {
    if (known.has(withoutTrailingSlash(ctx.path))) {
      throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; use GET.`, {
        headers: { Allow: ALLOW },
      });
    }
    throw new ApiError('NOT_FOUND', 'No such route. The v1 routes are listed at /v1/openapi.json.', {
      reason: 'route_not_found',
    });
  };
}

function withoutTrailingSlash(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
