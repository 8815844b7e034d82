import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { holdsKey, mayHoldKey } from '../auth/keyInUrl.js';
import { clientAddress } from './requestCredentials.js';

/** Long enough for every real route; a longer path is cut so one request cannot flood the log. */
const MAX_LOGGED_PATH = 256;
/** Enough for any real client's user agent; a longer one is cut. */
const MAX_LOGGED_USER_AGENT = 256;

/**
 * One JSON line per request, the only one: who asked (organization, key prefix, client
 * address as resolved with TRUSTED_PROXY_HOPS, user agent), what
 * came of it (status, and the refusal's reason), and the ids that find it elsewhere
 * (requestId; traceId when traced). Fields are values pino escapes (a newline in any input
 * becomes `\n` inside a JSON string, never a second line); the key never appears,
 * only its prefix. The query string (which may hold a misplaced key) is left out, and
 * a path segment that looks like a key is replaced before it is logged.
 */
export function logRequest(
  logger: Logger,
  ctx: ParameterizedContext<AppState>,
  durationMs: number,
  traceId: string | undefined,
  options: { readonly level: 'info' | 'debug'; readonly trustedProxyHops: number },
): void {
  if (!logger.isLevelEnabled(options.level)) return;
  const { state } = ctx;
  const principal = state.principal;
  const { headers } = ctx.req;
  const userAgent = headers['user-agent'];
  // One object literal of fixed shape per line; pino leaves out the fields that are undefined.
  logger[options.level](
    {
      requestId: state.requestId,
      traceId,
      method: ctx.method,
      route: state.route ?? null,
      path: loggablePath(ctx.path),
      status: ctx.status,
      durationMs: Math.round(durationMs * 100) / 100,
      organizationId: principal?.organizationId ?? null,
      keyPrefix: principal?.keyPrefix ?? state.keyPrefix ?? null,
      reason: state.refusal,
      clientAddress: clientAddress(ctx.req.socket.remoteAddress, headers['x-forwarded-for'], options.trustedProxyHops),
      userAgent:
        userAgent === undefined || userAgent.length <= MAX_LOGGED_USER_AGENT
          ? userAgent
          : `${userAgent.slice(0, MAX_LOGGED_USER_AGENT)}…`,
    },
    'request',
  );
}

/** The request path with key-like segments (`atl_…` or a bare key body, however encoded) redacted, and bounded. */
export function loggablePath(path: string): string {
  const redacted = !mayHoldKey(path)
    ? path
    : path
        .split('/')
        .map((segment) => (holdsKey(segment) ? '[redacted]' : segment))
        .join('/');
  return redacted.length > MAX_LOGGED_PATH ? `${redacted.slice(0, MAX_LOGGED_PATH)}…` : redacted;
}
