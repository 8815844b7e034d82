import { ApiError } from '../errors.js';
import { rateLimitFields } from './rateLimitFields.js';

/**
 * Admission: after authentication, one step takes a unit of the organization's request
 * limit and, when it has a usage ceiling, a place under it, both or neither
 * (src/usage/README.md, "Request limit and ceiling").
 */

/** The organization's usage as one verification reported it, and what it surely includes of the gateway's calls. */
export interface CallerUsage {
  readonly used: number;
  readonly ceiling: number | null;
  readonly periodEnd: Date;
  /** The gateway's acknowledged calls counted before the verify was sent: every one of them is in `used`. */
  readonly acknowledgedBefore: number;
}

/** What the request limit says about one request (the RateLimit fields). */
export interface LimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

/** One request's admission: the limit's decision, the ceiling's, and the way back for what it took. */
export interface Grant extends LimitDecision {
  /** The ceiling is reached: nothing was taken (the limit's unit neither). */
  readonly ceilingReached: boolean;
  /** The call was counted (recorded for delivery): its place stays taken until the key service acknowledges it. */
  keep(): void;
  /**
   * The call will not be counted: its place under the ceiling goes back, and its unit of
   * the request limit too when `limitToo` (the gateway's own failure, not the caller's). Once.
   */
  giveBack(limitToo: boolean): void;
}

export interface Admission {
  /** Rejects with LimiterUnavailable when the limit or the ceiling cannot be enforced. */
  take(organizationId: string, nowMs: number, usage?: CallerUsage): Promise<Grant>;
  /** False while the limit cannot be enforced (Redis not answering). */
  available(): boolean;
  close(): Promise<void>;
}

/** Headroom (calls) below which an organization counts as near its ceiling: verified on every request, usage sent at once. */
export const NEAR_CEILING_MARGIN = 100;

/** Seconds a consumer should wait after the limit could not be enforced: reconnecting takes at most a few. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * The limit or the ceiling cannot be enforced now (Redis unreachable or slow): denied with
 * 503, never let through; nothing can be granted until the retry, and the rate-limit fields say the same.
 */
export class LimiterUnavailable extends ApiError {
  constructor(policy: { readonly limit: number; readonly windowSeconds: number }, options: { cause: unknown }) {
    const retryAfter = UNAVAILABLE_RETRY_AFTER_SECONDS;
    super('SERVICE_UNAVAILABLE', 'The request limit cannot be enforced right now. Retry later.', {
      reason: 'limiter_unavailable',
      headers: {
        'Retry-After': String(retryAfter),
        ...rateLimitFields({ ...policy, remaining: 0, resetSeconds: retryAfter }),
      },
      cause: options.cause,
    });
  }
}

/** Calls under the ceiling left after this one, given every call that `used` may not include. */
export function ceilingRoom(usage: CallerUsage, notIncluded: number): number {
  return usage.ceiling === null ? Number.POSITIVE_INFINITY : usage.ceiling - usage.used - notIncluded;
}
