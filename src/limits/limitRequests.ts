import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';
import type { RequestLimiter } from './requestLimiter.js';

/** Takes one request from the organization's allowance; refuses with 429 beyond it. */
export function limitRequests(limiter: RequestLimiter): Middleware<AppState> {
  return async (ctx, next) => {
    const principal = ctx.state.principal;
    if (!principal) throw new ApiError('INTERNAL', 'An internal error occurred.');
    const decision = await limiter.take(principal.organizationId);
    // draft-ietf-httpapi-ratelimit-headers: the policy, and what is left of it now.
    ctx.set('RateLimit-Policy', `"per-organization";q=${decision.limit};w=${decision.windowSeconds}`);
    ctx.set('RateLimit', `"per-organization";r=${decision.remaining};t=${decision.resetSeconds}`);
    if (!decision.allowed) {
      throw new ApiError('RATE_LIMITED', 'Too many requests for this organization. Retry later.', {
        headers: { 'Retry-After': String(Math.max(1, decision.resetSeconds)) },
      });
    }
    await next();
  };
}
