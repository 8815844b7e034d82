import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { containsKeyLikeText } from './keyFormat.js';
import type { Authenticator } from './principal.js';

/** Query names under which people paste keys into URLs; such a key is burned. */
const KEY_LIKE_QUERY_NAMES = new Set(['api_key', 'apikey', 'api-key', 'x-api-key', 'key', 'token', 'access_token']);

/** Verifies the presented key before any cache, limiter or platform work. */
export function authenticate(authenticator: Authenticator): Middleware<AppState> {
  return async (ctx, next) => {
    const keyLikeQueryParameters = Object.entries(ctx.query)
      .filter(([name, value]) => KEY_LIKE_QUERY_NAMES.has(name.toLowerCase()) || holdsKey(value))
      .map(([name]) => name);
    // headersDistinct keeps every line of a repeated header (Node keeps only the first Authorization).
    const distinct = ctx.req.headersDistinct;
    ctx.state.principal = await authenticator.authenticate({
      authorization: ctx.get('Authorization') || undefined,
      authorizationHeaders: distinct.authorization,
      apiKeyHeader: distinct['x-api-key'] ?? ctx.req.headers['x-api-key'],
      keyLikeQueryParameters,
    });
    await next();
  };
}

function holdsKey(value: string | string[] | undefined): boolean {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.some((v) => v.trimStart().startsWith('atl_') || containsKeyLikeText(v));
}
