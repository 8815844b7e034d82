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
  const apiError = toApiError(fromKoaError(err));
  // A load-shedding 503 is a refusal like a 401: its request line says enough, no stack.
  if (apiError.status >= 500 && !shedsLoad(apiError)) {
    logger.error(
      { err: apiError.cause ?? apiError, requestId: ctx.state.requestId, route: ctx.state.route },
      'request failed',
    );
  }
  ctx.status = apiError.status;
  if (apiError.reason !== undefined) ctx.state.refusal = apiError.reason;
  for (const [name, value] of Object.entries(apiError.headers)) ctx.set(name, value);
  ctx.type = 'application/json';
  ctx.body = failureBody(apiError, ctx.state.requestId);
}

/** A 503 that asks to come back later because something is busy, not because something broke. */
function shedsLoad(apiError: ApiError): boolean {
  return apiError.status === 503 && apiError.cause instanceof UpstreamError && apiError.cause.failure === 'throttled';
}

/** Koa's own client errors (http-errors with expose) are the caller's fault: 400, not 500. */
function fromKoaError(err: unknown): unknown {
  if (err instanceof ApiError) return err;
  if (typeof err === 'object' && err !== null && 'status' in err && 'expose' in err) {
    const status = Number((err as { status: unknown }).status);
    if ((err as { expose: unknown }).expose === true && status >= 400 && status < 500) {
      return new ApiError('BAD_REQUEST', 'The request could not be read.', { cause: err });
    }
  }
  return err;
}
