import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { holdsKey, mayHoldKey } from '../auth/keyInUrl.js';
import { clientAddress } from './requestCredentials.js';

/** Longer paths and user agents are cut, so one request cannot flood the log. */
const MAX_LOGGED_PATH = 256;
const MAX_LOGGED_USER_AGENT = 256;

/**
 * The one JSON line per request: who asked, what came of it, and the ids that find it elsewhere.
 * Every field is a value pino escapes (never a second line). The key never appears, only its prefix;
 * the query string (which may hold a misplaced key) is left out, and key-like path segments redacted.
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
  const { principal } = state;
  const { headers } = ctx.req;
  const userAgent = headers['user-agent'];
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

/** The path with key-like segments (`atl_…` or a bare key body, however encoded) redacted, and bounded. */
export function loggablePath(path: string): string {
  const redacted = !mayHoldKey(path)
    ? path
    : path
        .split('/')
        .map((segment) => (holdsKey(segment) ? '[redacted]' : segment))
        .join('/');
  return redacted.length > MAX_LOGGED_PATH ? `${redacted.slice(0, MAX_LOGGED_PATH)}…` : redacted;
}
