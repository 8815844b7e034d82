import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { holdsKey, mayHoldKey } from '../auth/keyInUrl.js';
import { clientAddress } from './requestCredentials.js';

/** Longer paths and user agents are cut, so one request cannot flood the log. */
const MAX_LOGGED_LENGTH = 256;
const cut = (text: string) => (text.length > MAX_LOGGED_LENGTH ? `${text.slice(0, MAX_LOGGED_LENGTH)}…` : text);

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
      userAgent: headers['user-agent'] === undefined ? undefined : cut(headers['user-agent']),
    },
    'request',
  );
}

/** The path with key-like segments (`atl_…` or a bare key body, however encoded) redacted, and bounded. */
export function loggablePath(path: string): string {
  if (!mayHoldKey(path)) return cut(path);
  return cut(path.replace(/[^/]+/g, (segment) => (holdsKey(segment) ? '[redacted]' : segment)));
}
