import { HttpError, type ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { failureBody } from '../envelope.js';
import { ApiError, toApiError, UpstreamError } from '../errors.js';
import type { RationedLog } from './refusalLog.js';

/**
 * The one place a failure becomes a response: the envelope, the code's status, the failure's headers.
 * A fault's line is rationed by `failures`; an upstream's failure, expected of any upstream, is
 * written as what failed and how, without a stack that would only show the gateway's own calls.
 */
export function respondWithError(
  ctx: ParameterizedContext<AppState>,
  err: unknown,
  logger: Logger,
  failures: RationedLog,
): void {
  // Already answered by a shutdown's drain limit: what failed after cannot reach the caller, nor is it a fault.
  if (ctx.res.writableEnded) return;
  const apiError = toApiError(fromKoaError(err));
  if (apiError.status >= 500 && !refusesForNow(apiError) && failures.admit(apiError.reason)) {
    const { cause } = apiError;
    const { requestId, route } = ctx.state;
    if (cause instanceof UpstreamError) {
      const { upstream, failure, detail } = cause;
      logger.error({ upstream, failure, detail, requestId, route, reason: apiError.reason }, 'request failed');
    } else logger.error({ err: cause ?? apiError, requestId, route, reason: apiError.reason }, 'request failed');
  }
  ctx.status = apiError.status;
  ctx.state.refusal = apiError.reason;
  for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
  ctx.type = 'application/json';
  ctx.body = failureBody(apiError, ctx.state.requestId);
}

/** The gateway's own 503s that ask to come back later. */
const REFUSALS_FOR_NOW: ReadonlySet<string> = new Set(['limiter_unavailable', 'verification_busy', 'usage_backlog']);

/**
 * A 503 that asks to come back later (shed load, the key service or the limiter's Redis down: each
 * seen in metrics and readiness) is a refusal like a 401, not a fault: a stack for each would flood the log.
 */
function refusesForNow({ status, reason, cause }: ApiError): boolean {
  if (status !== 503) return false;
  const upstreamDown =
    cause instanceof UpstreamError && (cause.failure === 'throttled' || cause.upstream === 'key-service');
  return upstreamDown || REFUSALS_FOR_NOW.has(reason);
}

/** Koa's own client errors (http-errors it exposes) are the caller's fault: 400, not 500. */
function fromKoaError(err: unknown): unknown {
  if (!(err instanceof HttpError && err.expose && err.status >= 400 && err.status < 500)) return err;
  return new ApiError('BAD_REQUEST', 'The request could not be read.', { reason: 'unreadable_request', cause: err });
}
