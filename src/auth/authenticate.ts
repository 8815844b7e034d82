import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { containsKeyLikeText } from './keyFormat.js';
import type { Authenticator, Principal } from './principal.js';

/** Query names under which people paste keys into URLs; such a key is burned. */
const KEY_LIKE_QUERY_NAMES = new Set(['api_key', 'apikey', 'api-key', 'x-api-key', 'key', 'token', 'access_token']);

/** Verifies the presented key before any cache, limiter or platform work. */
export function authenticateRequest(ctx: ParameterizedContext<AppState>, authenticator: Authenticator): Promise<Principal> {
  const { headers } = ctx.req;
  const authorization = headers.authorization;
  return authenticator.authenticate({
    authorization: authorization === '' ? undefined : authorization,
    authorizationHeaders: repeatedAuthorization(ctx.req.rawHeaders),
    // Node joins repeated X-API-Key lines with ", "; a key never holds a comma.
    apiKeyHeader: headers['x-api-key'],
    keyLikeQueryParameters: keyLikeQueryParameters(ctx.query),
    onKeyPrefix: (keyPrefix) => {
      ctx.state.keyPrefix = keyPrefix;
    },
  });
}

function keyLikeQueryParameters(query: Record<string, string | string[] | undefined>): string[] {
  const names: string[] = [];
  for (const name in query) {
    if (KEY_LIKE_QUERY_NAMES.has(name.toLowerCase()) || holdsKey(query[name])) names.push(name);
  }
  return names;
}

/**
 * Every Authorization line when the request repeated it (Node keeps only the first in
 * `headers`, so a second, different key would go unseen); undefined for one or none.
 */
function repeatedAuthorization(rawHeaders: readonly string[]): string[] | undefined {
  let lines: string[] | undefined;
  let first: string | undefined;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i];
    if (name === undefined || name.length !== 13 || name.toLowerCase() !== 'authorization') continue;
    const value = rawHeaders[i + 1] ?? '';
    if (first === undefined) first = value;
    else (lines ??= [first]).push(value);
  }
  return lines;
}

function holdsKey(value: string | string[] | undefined): boolean {
  const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return values.some((v) => v.trimStart().startsWith('atl_') || containsKeyLikeText(v));
}
