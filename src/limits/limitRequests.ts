import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { Principal } from '../auth/principal.js';
import { ApiError } from '../errors.js';
import type { LimiterOutcome } from '../metrics/gatewayMetrics.js';
import { rateLimitFields } from './rateLimitFields.js';
import type { RequestLimiter } from './requestLimiter.js';

/** Takes one request from the organization's allowance; refuses with 429 beyond it. */
export async function takeFromLimit(
  ctx: ParameterizedContext<AppState>,
  limiter: RequestLimiter,
  principal: Principal,
  onDecision?: (outcome: LimiterOutcome) => void,
): Promise<void> {
  let decision;
  try {
    decision = await limiter.take(principal.organizationId);
  } catch (err: unknown) {
    onDecision?.('unavailable');
    throw err;
  }
  onDecision?.(decision.allowed ? 'allowed' : 'limited');
  const fields = rateLimitFields(decision);
  ctx.res.setHeader('RateLimit-Policy', fields['RateLimit-Policy']);
  ctx.res.setHeader('RateLimit', fields.RateLimit);
  if (!decision.allowed) {
    throw new ApiError('RATE_LIMITED', 'Too many requests for this organization. Retry later.', {
      headers: { 'Retry-After': String(Math.max(1, decision.resetSeconds)) },
    });
  }
}
