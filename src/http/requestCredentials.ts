import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { PresentedCredentials } from '../auth/principal.js';

/**
 * The Koa side of authentication: what the request presented, as plain values.
 * `trustedProxyHops`: how many proxies in front of the gateway append to X-Forwarded-For.
 */
export function requestCredentials(
  ctx: ParameterizedContext<AppState>,
  trustedProxyHops: number,
): PresentedCredentials {
  const { headers } = ctx.req;
  const authorization = headers.authorization;
  return {
    authorization: authorization === '' ? undefined : authorization,
    authorizationHeaders: repeatedAuthorization(ctx.req.rawHeaders),
    // Node joins repeated X-API-Key lines with ", "; a key never holds a comma.
    apiKeyHeader: headers['x-api-key'],
    clientAddress: clientAddress(ctx.req.socket.remoteAddress, headers['x-forwarded-for'], trustedProxyHops),
    onKeyPrefix: (keyPrefix) => {
      ctx.state.keyPrefix = keyPrefix;
    },
    onKnownKeyUnserved: () => {
      ctx.state.knownKeyUnserved = true;
    },
  };
}

/**
 * The caller's address: the socket's, or, behind `hops` trusted proxies, the address the
 * outermost of them wrote, counted from the right of X-Forwarded-For (entries further left
 * were written by the caller and prove nothing). Too few entries: the leftmost there is.
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | string[] | undefined,
  hops: number,
): string {
  const socket = socketAddress ?? 'unknown';
  if (hops === 0 || forwardedFor === undefined) return socket;
  const entries = (typeof forwardedFor === 'string' ? [forwardedFor] : forwardedFor)
    .flatMap((line) => line.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0) return socket;
  return entries[Math.max(0, entries.length - hops)] ?? socket;
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
    if (first === undefined) {
      first = value;
    } else {
      lines ??= [first];
      lines.push(value);
    }
  }
  return lines;
}
