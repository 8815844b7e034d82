import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { authFailure } from '../auth/authFailures.js';
import type { Principal } from '../auth/principal.js';
import { ApiError } from '../errors.js';
import type { Admission, Grant } from '../limits/admission.js';
import { rateLimitFields } from '../limits/rateLimitFields.js';
import type { LimiterOutcome } from '../metrics/gatewayMetrics.js';

/**
 * Admission over HTTP: takes a unit of the request limit and a place under the ceiling, sets the
 * RateLimit fields, and refuses with 403 at the ceiling, 429 beyond the limit, 503 when either cannot be enforced.
 */
export async function admit(
  ctx: ParameterizedContext<AppState>,
  admission: Admission,
  principal: Principal,
  nowMs: number,
  onDecision?: (outcome: LimiterOutcome) => void,
): Promise<Grant> {
  let grant: Grant;
  try {
    grant = await admission.take(principal.organizationId, nowMs, principal.usage);
  } catch (err: unknown) {
    onDecision?.('unavailable');
    throw err;
  }
  if (grant.ceilingReached) throw authFailure('usage_ceiling_reached');
  onDecision?.(grant.allowed ? 'allowed' : 'limited');
  const fields = rateLimitFields(grant);
  ctx.res.setHeader('RateLimit-Policy', fields['RateLimit-Policy']);
  ctx.res.setHeader('RateLimit', fields.RateLimit);
  if (!grant.allowed) {
    throw new ApiError('RATE_LIMITED', 'Too many requests for this organization. Retry later.', {
      reason: 'request_limit_reached',
      headers: { 'Retry-After': String(Math.max(1, grant.resetSeconds)) },
    });
  }
  return grant;
}

/** The gateway's own failures (5xx) and refusals after admission (429) give the limit's unit back. */
export function refundsLimit(status: number): boolean {
  return status >= 500 || status === 429;
}
