import type { Middleware, Next, ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { activeTraceId, endServerSpan, startServerSpan, tracingOn, withContext } from '../telemetry/spans.js';
import { logRequest } from './logRequests.js';
import { WATCH_PATHS } from './operationalRoutes.js';
import { holdRefusal } from './refusalDelay.js';
import { createRefusalLog } from './refusalLog.js';
import { assignRequestId } from './requestId.js';
import { respondWithError } from './respondWithErrors.js';
import { setSecurityHeaders } from './securityHeaders.js';

/**
 * The outermost step, around everything else: give the request its id; turn any
 * failure into the error envelope; then, whatever happened, count and time it and
 * write its log line once its answer is out. One middleware rather than four: each Koa
 * layer costs an async call per request, and these four always run together, in this
 * order. When tracing is on, all of it runs inside the request's server span, so every
 * span and log line of the request belongs to the caller's trace.
 */
export interface ObserveOptions {
  /** How long refusals of callers without a valid key wait. Default 0. */
  readonly refusalDelayMs?: number;
  /** For the client address in the log line (TRUSTED_PROXY_HOPS). Default 0. */
  readonly trustedProxyHops?: number;
}

/**
 * Health checks, readiness checks and scrapes come every few seconds from every balancer
 * and scraper, and say nothing about callers: their lines are written at debug, and they
 * are never traced.
 */
const isWatchPath = (path: string): boolean => (WATCH_PATHS as readonly string[]).includes(path);

export function observeRequests(
  logger: Logger,
  metrics: GatewayMetrics,
  options: ObserveOptions = {},
  refusals = createRefusalLog(logger),
): Middleware<AppState> {
  const refusalDelayMs = options.refusalDelayMs ?? 0;
  const trustedProxyHops = options.trustedProxyHops ?? 0;
  const observe = async (ctx: ParameterizedContext<AppState>, next: Next): Promise<void> => {
    const started = performance.now();
    assignRequestId(ctx);
    // The count and the line are taken when the exchange ends ('close'), once its answer is
    // out, whoever sent it: Koa after this middleware, or a shutdown's drain limit while the
    // handler still runs (the process may exit before the handler ends). A caller who went
    // away first, with no answer out, is recorded when the handler ends, with what the
    // gateway came to. Each request is recorded by exactly one of the two places below. The
    // trace id is read now, inside the request's span.
    const traceId = activeTraceId();
    const { res } = ctx;
    let handled = false;
    const onClose = () => {
      if (handled || res.writableFinished) record(ctx, started, traceId);
    };
    res.once('close', onClose);
    try {
      await next();
    } catch (err: unknown) {
      respondWithError(ctx, err, logger);
      setSecurityHeaders(res, ctx.status);
      // A refusal held back is sent by a timer: its line and count are taken now.
      if (holdRefusal(ctx, refusalDelayMs, started)) {
        res.removeListener('close', onClose);
        record(ctx, started, traceId);
        return;
      }
    }
    setSecurityHeaders(res, ctx.status);
    handled = true;
    if (res.closed && !res.writableFinished) record(ctx, started, traceId);
  };
  const record = (ctx: ParameterizedContext<AppState>, started: number, traceId: string | undefined): void => {
    const ms = performance.now() - started;
    // A route pattern, never the raw path (unbounded caller input): only a path no route knows is `unmatched`.
    metrics.httpRequest(ctx.state.route ?? 'unmatched', ctx.method, ctx.status, ms / 1000);
    // A refused caller who never showed a valid key may be one of a flood: its line is rationed.
    const refusal = ctx.state.refusal ?? (ctx.status >= 400 ? String(ctx.status) : undefined);
    if (
      refusal === undefined ||
      ctx.state.principal !== undefined ||
      (ctx.status >= 500 && ctx.status !== 503) ||
      refusals.admit(refusal)
    ) {
      logRequest(logger, ctx, ms, traceId, {
        level: isWatchPath(ctx.path) ? 'debug' : 'info',
        trustedProxyHops,
      });
    }
  };
  return (ctx, next) => {
    if (!tracingOn() || isWatchPath(ctx.path)) return observe(ctx, next);
    const server = startServerSpan(ctx.method, ctx.req.headers);
    return withContext(server.context, () =>
      observe(ctx, next).finally(() => endServerSpan(server.span, ctx.method, ctx.state.route, ctx.status)),
    );
  };
}
