import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';
import { rateLimitFields } from './rateLimitFields.js';
import type { RequestLimiter } from './requestLimiter.js';

/** Takes one request from the organization's allowance; refuses with 429 beyond it. */
export function limitRequests(
  limiter: RequestLimiter,
  onDecision?: (outcome: 'allowed' | 'limited' | 'unavailable') => void,
): Middleware<AppState> {
  return async (ctx, next) => {
    const principal = ctx.state.principal;
    if (!principal) throw new ApiError('INTERNAL', 'An internal error occurred.');
    let decision;
    try {
      decision = await limiter.take(principal.organizationId);
    } catch (err: unknown) {
      onDecision?.('unavailable');
      throw err;
    }
    onDecision?.(decision.allowed ? 'allowed' : 'limited');
    ctx.set(rateLimitFields(decision));
    if (!decision.allowed) {
      throw new ApiError('RATE_LIMITED', 'Too many requests for this organization. Retry later.', {
        headers: { 'Retry-After': String(Math.max(1, decision.resetSeconds)) },
      });
    }
    await next();
  };
}
