import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { authFailure } from '../auth/authFailures.js';
import type { Principal } from '../auth/principal.js';
import { ApiError } from '../errors.js';
import type { Admission, Grant } from '../limits/admission.js';
import { rateLimitFields } from '../limits/rateLimitFields.js';
import type { LimiterOutcome } from '../metrics/gatewayMetrics.js';
import { inSpan } from '../telemetry/spans.js';

/** Waits before asking again while a refusal at the ceiling is in doubt: about one delivery of usage, then doubling. */
const DOUBT_HOLDS_MS = [25, 50, 100, 200];

/**
 * Authentication, then admission over HTTP: takes a unit of the request limit and a place under the ceiling,
 * sets the RateLimit fields, and refuses with 403 at the ceiling, 429 beyond the limit, 503 when either cannot
 * be enforced. A refusal at the ceiling in doubt is held, then both steps run again with a fresh verification
 * (src/usage/README.md, "The ceiling's arithmetic").
 */
export async function admit(
  ctx: ParameterizedContext<AppState>,
  admission: Admission,
  authenticate: () => Promise<Principal>,
  clock: () => Date,
  onDecision?: (outcome: LimiterOutcome) => void,
): Promise<{ principal: Principal; grant: Grant; now: Date }> {
  for (let holds = 0; ; holds += 1) {
    const principal = await inSpan('auth', authenticate);
    ctx.state.principal = principal;
    const now = clock();
    let grant: Grant;
    try {
      const taken = inSpan('admit', () => admission.take(principal.organizationId, now.getTime(), principal.usage));
      grant = taken instanceof Promise ? await taken : taken;
    } catch (err: unknown) {
      onDecision?.('unavailable');
      throw err;
    }
    const hold = grant.ceilingInDoubt ? DOUBT_HOLDS_MS[holds] : undefined;
    if (hold !== undefined) {
      await delay(hold);
      continue;
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
    return { principal, grant, now };
  }
}

/** The gateway's own failures (5xx) and refusals after admission (429) give the limit's unit back. */
export function refundsLimit(status: number): boolean {
  return status >= 500 || status === 429;
}

/**
 * Calls `ended` once with the status of the answer written whole to the connection (handed to the
 * system), or null when the connection failed before it was: a client gone, a reset, a body that could
 * not be read, or an answer queued behind one that closed the connection (pipelining).
 */
export function whenAnswerEnds(res: ServerResponse, socket: Socket, ended: (written: number | null) => void): void {
  if (res.writableFinished) ended(res.statusCode);
  else if (res.destroyed || socket.destroyed) ended(null);
  // 'close' comes once per answer (src/http/createHttpServer.ts).
  else res.on('close', () => ended(res.writableFinished ? res.statusCode : null));
}
