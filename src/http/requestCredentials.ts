import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { PresentedCredentials } from '../auth/principal.js';

/** The Koa side of authentication: what the request presented, as plain values. */
export function requestCredentials(ctx: ParameterizedContext<AppState>): PresentedCredentials {
  const { headers } = ctx.req;
  const authorization = headers.authorization;
  return {
    authorization: authorization === '' ? undefined : authorization,
    authorizationHeaders: repeatedAuthorization(ctx.req.rawHeaders),
    // Node joins repeated X-API-Key lines with ", "; a key never holds a comma.
    apiKeyHeader: headers['x-api-key'],
  };
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
