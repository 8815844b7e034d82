import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';
import { rateLimitFields } from '../limits/rateLimitFields.js';
import { type LimitDecision, LimiterUnavailable, type RequestLimiter } from '../limits/requestLimiter.js';
import type { LimiterOutcome } from '../metrics/gatewayMetrics.js';

/**
 * The request limit over HTTP: takes one request from the organization's allowance,
 * sets the RateLimit fields, and refuses with 429 beyond it, or 503 when the limit
 * cannot be enforced. Synchronous when the limiter decides synchronously (the local
 * one): a promise only when there is something to wait for.
 */
export function takeFromLimit(
  ctx: ParameterizedContext<AppState>,
  limiter: RequestLimiter,
  organizationId: string,
  nowMs: number,
  onDecision?: (outcome: LimiterOutcome) => void,
): Promise<void> | undefined {
  const refuse = (err: unknown): never => {
    onDecision?.('unavailable');
    throw err instanceof LimiterUnavailable ? limiterUnavailable(err) : err;
  };
  let decision: LimitDecision | Promise<LimitDecision>;
  try {
    decision = limiter.take(organizationId, nowMs);
  } catch (err: unknown) {
    return refuse(err);
  }
  if ('then' in decision) return decision.then((taken) => apply(ctx, taken, onDecision), refuse);
  apply(ctx, decision, onDecision);
  return undefined;
}

function apply(
  ctx: ParameterizedContext<AppState>,
  decision: LimitDecision,
  onDecision: ((outcome: LimiterOutcome) => void) | undefined,
): void {
  onDecision?.(decision.allowed ? 'allowed' : 'limited');
  const fields = rateLimitFields(decision);
  ctx.res.setHeader('RateLimit-Policy', fields['RateLimit-Policy']);
  ctx.res.setHeader('RateLimit', fields.RateLimit);
  if (!decision.allowed) {
    throw new ApiError('RATE_LIMITED', 'Too many requests for this organization. Retry later.', {
      reason: 'request_limit_reached',
      headers: { 'Retry-After': String(Math.max(1, decision.resetSeconds)) },
    });
  }
}

/** 503: nothing can be granted until the retry, and the rate-limit fields say the same. */
function limiterUnavailable(unavailable: LimiterUnavailable): ApiError {
  const retryAfter = unavailable.retryAfterSeconds;
  return new ApiError('SERVICE_UNAVAILABLE', 'The request limit cannot be enforced right now. Retry later.', {
    reason: 'limiter_unavailable',
    headers: {
      'Retry-After': String(retryAfter),
      ...rateLimitFields({ ...unavailable.policy, remaining: 0, resetSeconds: retryAfter }),
    },
    cause: unavailable,
  });
}
