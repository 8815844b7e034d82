import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { authFailure } from '../auth/authFailures.js';
import { urlHoldsKey } from '../auth/keyInUrl.js';

/** Query names under which people paste keys into URLs; such a key is burned, whatever its text. */
const KEY_LIKE_QUERY_NAMES = new Set(['api_key', 'apikey', 'api-key', 'x-api-key', 'key', 'token', 'access_token']);

/**
 * A key in a URL has been written to proxies' and browsers' logs: refuse the request
 * before routing (a key as a path segment would otherwise get a 404), and even when a
 * header also carries a key, so the caller learns to stop and to rotate it. Being before
 * authentication, it looks no key up: a header key beside it spends no failed-key budget.
 */
export function refuseKeyInUrl(): Middleware<AppState> {
  return async (ctx, next) => {
    if (urlHoldsKey(ctx.originalUrl) || hasKeyLikeQueryName(ctx.querystring, () => ctx.query)) {
      throw authFailure('key_in_query');
    }
    await next();
  };
}

/**
 * Every key-like name holds `key` or `token`, spelled out or behind an escape: a query
 * string with neither (the common case) is not parsed here, so a route that reads its
 * own query string never pays for Koa's parse.
 */
const MAY_NAME_A_KEY = /key|token|%/i;

function hasKeyLikeQueryName(querystring: string, parsed: () => Record<string, unknown>): boolean {
  if (!MAY_NAME_A_KEY.test(querystring)) return false;
  for (const name in parsed()) if (KEY_LIKE_QUERY_NAMES.has(name.toLowerCase())) return true;
  return false;
}
