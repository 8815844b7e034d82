import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { PresentedCredentials } from '../auth/principal.js';

/** What the request presented, as plain values. */
export function requestCredentials(
  ctx: ParameterizedContext<AppState>,
  trustedProxyHops: number,
): PresentedCredentials {
  const { headers } = ctx.req;
  // Node keeps only the first Authorization in `headers`: a second, different key would go unseen.
  const authorizationLines = ctx.req.headersDistinct.authorization;
  return {
    authorization: headers.authorization === '' ? undefined : headers.authorization,
    authorizationHeaders: authorizationLines && authorizationLines.length > 1 ? authorizationLines : undefined,
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
  const entries = [forwardedFor]
    .flat()
    .flatMap((line) => line.split(','))
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  return entries[Math.max(0, entries.length - hops)] ?? socket;
}
