import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { authFailure } from '../auth/authFailures.js';
import { urlHoldsKey } from '../auth/keyInUrl.js';

/** Query names under which people paste keys into URLs; such a key is burned, whatever its text. */
const KEY_NAMES = new Set(['api_key', 'apikey', 'api-key', 'x-api-key', 'key', 'token', 'access_token']);
/** Every such name holds `key` or `token`, or an escape: other query strings are not parsed here. */
const MAY_NAME_A_KEY = /key|token|%/i;
const namesKey = (name: string) => KEY_NAMES.has(name.toLowerCase());

/**
 * A key in a URL has been written to proxies' and browsers' logs: refuse it before routing (else a
 * 404), even beside a header key, so the caller learns to rotate it. No key is looked up here.
 */
export function refuseKeyInUrl(): Middleware<AppState> {
  return (ctx, next) => {
    const keyInQuery = MAY_NAME_A_KEY.test(ctx.querystring) && Object.keys(ctx.query).some(namesKey);
    if (keyInQuery || urlHoldsKey(ctx.originalUrl)) throw authFailure('key_in_query');
    return next();
  };
}
