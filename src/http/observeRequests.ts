import { context } from '@opentelemetry/api';
import type { Middleware, Next, ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { holdsKey, mayHoldKey } from '../auth/keyInUrl.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { activeTraceId, endServerSpan, startServerSpan, tracingOn } from '../telemetry/spans.js';
import { WATCH_PATHS } from './operationalRoutes.js';
import { holdRefusal } from './refusalDelay.js';
import { createFailureLog, createRefusalLog } from './refusalLog.js';
import { clientAddress } from './requestCredentials.js';
import { requestIdOf } from './requestId.js';
import { respondWithError } from './respondWithErrors.js';

/** Longer paths and user agents are cut, so one request cannot flood the log. */
const MAX_LOGGED_LENGTH = 256;
const cut = (text: string) => (text.length > MAX_LOGGED_LENGTH ? `${text.slice(0, MAX_LOGGED_LENGTH)}…` : text);

/** The path with key-like segments (`atl_…` or a bare key body, however encoded) redacted, and bounded. */
export function loggablePath(path: string): string {
  if (!mayHoldKey(path)) return cut(path);
  return cut(path.replace(/[^/]+/g, (segment) => (holdsKey(segment) ? '[redacted]' : segment)));
}

/** Probes and scrapes say nothing about callers: their lines are written at debug, and they are never traced. */
const isWatchPath = (path: string): boolean => (WATCH_PATHS as readonly string[]).includes(path);

/**
 * The outermost step: give the request its id; turn any failure into the error envelope; then count
 * and time it and write its log line once its answer is out. One middleware rather than four, as each
 * Koa layer costs an async call per request. `refusalDelayMs`: how long refusals of unknown callers wait.
 */
export function observeRequests(
  logger: Logger,
  metrics: GatewayMetrics,
  { refusalDelayMs = 0, trustedProxyHops = 0 }: { refusalDelayMs?: number; trustedProxyHops?: number } = {},
): Middleware<AppState> {
  const refusals = createRefusalLog(logger);
  const failures = createFailureLog(logger);
  const observe = async (ctx: ParameterizedContext<AppState>, next: Next): Promise<void> => {
    const started = performance.now();
    const { res } = ctx;
    ctx.state.requestId = requestIdOf(ctx.req.headers['x-request-id']);
    res.setHeader('X-Request-Id', ctx.state.requestId);
    // Recorded exactly once: when the exchange closes with its answer out (from Koa, or from a shutdown's
    // drain limit while the handler still runs), or, for a caller gone with no answer, when the handler ends.
    const traceId = activeTraceId();
    let handled = false;
    const onClose = () => {
      if (handled || res.writableFinished) record(ctx, started, traceId);
    };
    res.on('close', onClose); // once per answer (createHttpServer.ts)
    let failed = false;
    try {
      await next();
    } catch (err: unknown) {
      respondWithError(ctx, err, logger, failures);
      failed = true;
    }
    // Never sniffed; and an error, which speaks of a moment or a caller, is never stored by anyone.
    if (!res.headersSent) {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      if (ctx.status >= 400) res.setHeader('Cache-Control', 'no-store');
    }
    // A refusal held back is sent by a timer: its line and count are taken now.
    const held = failed && holdRefusal(ctx, refusalDelayMs, started);
    if (held === true) {
      res.removeListener('close', onClose);
      record(ctx, started, traceId);
      return;
    }
    if (held !== false) await held;
    handled = true;
    if (res.closed && !res.writableFinished) record(ctx, started, traceId);
  };
  const record = (ctx: ParameterizedContext<AppState>, started: number, traceId: string | undefined): void => {
    const ms = performance.now() - started;
    const { state, req } = ctx;
    // A route pattern, never the raw path (unbounded caller input).
    metrics.httpRequest(state.route ?? 'unmatched', ctx.method, ctx.status, ms / 1000);
    // A refused caller who never showed a valid key may be one of a flood: its line is rationed.
    const refusal = state.refusal ?? (ctx.status >= 400 ? String(ctx.status) : undefined);
    const rationed = refusal !== undefined && state.principal === undefined && (ctx.status < 500 || ctx.status === 503);
    const level = isWatchPath(ctx.path) ? 'debug' : 'info';
    if ((rationed && !refusals.admit(refusal)) || !logger.isLevelEnabled(level)) return;
    // The one JSON line per request: who asked, what came of it, and the ids that find it elsewhere.
    // Every field is a value pino escapes (never a second line). The key never appears, only its prefix;
    // the query string (which may hold a misplaced key) is left out, and key-like path segments redacted.
    logger[level](
      {
        requestId: state.requestId,
        traceId,
        method: ctx.method,
        route: state.route ?? null,
        path: loggablePath(ctx.path),
        status: ctx.status,
        durationMs: Math.round(ms * 100) / 100,
        organizationId: state.principal?.organizationId ?? null,
        keyPrefix: state.principal?.keyPrefix ?? state.keyPrefix ?? null,
        reason: state.refusal,
        clientAddress: clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], trustedProxyHops),
        userAgent: req.headers['user-agent'] === undefined ? undefined : cut(req.headers['user-agent']),
      },
      'request',
    );
  };
  return (ctx, next) => {
    if (!tracingOn() || isWatchPath(ctx.path)) return observe(ctx, next);
    const server = startServerSpan(ctx.method, ctx.req.headers);
    return context.with(server.context, () =>
      observe(ctx, next).finally(() => endServerSpan(server.span, ctx.method, ctx.state.route, ctx.status)),
    );
  };
}
