import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';

const ALLOW = 'GET, HEAD';

/**
 * Runs when no route matched. A known path asked with another method is 405 with
 * Allow, counted and logged under that route's pattern; anything else is 404. Both
 * answer before authentication: they say nothing about any organization.
 * Patterns may hold `:name` segments (one path segment each), as the router's do.
 */
export function unmatchedPaths(knownPatterns: readonly string[]): Middleware<AppState> {
  const known = knownPatterns.map((pattern) => ({ pattern, matches: matcherOf(pattern) }));
  return async (ctx) => {
    const path = comparablePath(ctx.path);
    const route = known.find((entry) => entry.matches(path));
    if (route !== undefined) {
      ctx.state.route = route.pattern;
      throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed here; use GET.`, {
        headers: { Allow: ALLOW },
      });
    }
    throw new ApiError('NOT_FOUND', 'No such route. The v1 routes are listed at /v1/openapi.json.', {
      reason: 'route_not_found',
    });
  };
}

function matcherOf(pattern: string): (path: string) => boolean {
  const plain = comparablePath(pattern);
  if (!plain.includes(':')) return (path) => path === plain;
  const segments = plain.split('/');
  return (path) => {
    const given = path.split('/');
    return given.length === segments.length && segments.every((s, i) => (s.startsWith(':') ? given[i] !== '' : s === given[i]));
  };
}

/** Matches paths the way the router does: case-insensitive, one trailing slash optional. */
function comparablePath(path: string): string {
  const lower = path.toLowerCase();
  return lower.length > 1 && lower.endsWith('/') ? lower.slice(0, -1) : lower;
}
