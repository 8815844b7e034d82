import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';
import { failureBody } from '../envelope.js';
import { ApiError, toApiError, UpstreamError } from '../errors.js';

/**
 * The one place a failure becomes a response: the envelope with `data: null`, the
 * code's status, and the headers the failure carries. 5xx details stay in the log.
 */
export function respondWithError(ctx: ParameterizedContext<AppState>, err: unknown, logger: Logger): void {
  // Already answered in full (a shutdown's drain limit sent a 503): the failure that followed,
  // such as a header set on the sent answer, cannot reach the caller and is no fault to log.
  if (ctx.res.writableEnded) return;
  const apiError = toApiError(fromKoaError(err));
  // A 503 that refuses for now is a refusal like a 401: its request line and reason say enough, no stack.
  if (apiError.status >= 500 && !refusesForNow(apiError)) {
    logger.error(
      { err: apiError.cause ?? apiError, requestId: ctx.state.requestId, route: ctx.state.route },
      'request failed',
    );
  }
  ctx.status = apiError.status;
  ctx.state.refusal = apiError.reason;
  for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
  ctx.type = 'application/json';
  ctx.body = failureBody(apiError, ctx.state.requestId);
}

/**
 * A 503 that asks to come back later: something is busy (shed load), the key service
 * cannot answer (authentication fails closed; its calls are counted by outcome in the
 * metrics and readiness says it is down), or the limiter's Redis cannot (the connection
 * logs its own state once, readiness says it is down). None is a fault of the gateway to
 * trace, and a stack per refused request would flood the log for the outage's length.
 */
function refusesForNow(apiError: ApiError): boolean {
  if (apiError.status !== 503) return false;
  if (apiError.reason === 'limiter_unavailable') return true;
  if (!(apiError.cause instanceof UpstreamError)) return false;
  return apiError.cause.failure === 'throttled' || apiError.cause.upstream === 'key-service';
}

/** Koa's own client errors (http-errors with expose) are the caller's fault: 400, not 500. */
function fromKoaError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  if (typeof err === 'object' && err !== null && 'status' in err && 'expose' in err) {
    const status = Number((err as { status: unknown }).status);
    if ((err as { expose: unknown }).expose === true && status >= 400 && status < 500) {
      return new ApiError('BAD_REQUEST', 'The request could not be read.', {
        reason: 'unreadable_request',
        cause: err,
      });
    }
  }
  return err;
}
