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
  const known = new Set(knownPaths.map(comparablePath));
  return async (ctx) => {
    if (known.has(comparablePath(ctx.path))) {
      throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; use GET.`, {
        headers: { Allow: ALLOW },
      });
    }
    throw new ApiError('NOT_FOUND', 'No such route. The v1 routes are listed at /v1/openapi.json.', {
      reason: 'route_not_found',
    });
  };
}

/** Matches paths the way the router does: case-insensitive, one trailing slash optional. */
function comparablePath(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}
