import { ApiError } from '../errors.js';
import type { UsageLedger } from '../usage/usageLedger.js';
import { rateLimitFields } from './rateLimitFields.js';

/** The organization's usage as one verification reported it (src/usage/README.md, "The ceiling's arithmetic"). */
export interface CallerUsage {
  readonly used: number;
  readonly ceiling: number | null;
  readonly periodEnd: Date;
  /** The gateway's calls acknowledged before the verify was sent: every one of them is in `used`. */
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

/** One request's admission: a unit of the limit and a place under the ceiling, both or neither. */
export interface Grant extends LimitDecision {
  /** The ceiling is reached: nothing was taken (the limit's unit neither). */
  readonly ceilingReached: boolean;
  /** Reached only if calls on their way to the key service are not in the verification's `used`: a fresh one may admit. */
  readonly ceilingInDoubt: boolean;
  /** The call was recorded for delivery: its place stays taken until the key service acknowledges it. */
  keep(): void;
  /** The call is not counted: its place goes back, and its unit of the limit too when `limitToo`. Once. */
  giveBack(limitToo: boolean): void;
}

export interface AdmissionOptions {
  /** RATE_LIMIT_REQUESTS per RATE_LIMIT_WINDOW_SECONDS, per organization. */
  readonly requests: number;
  readonly windowSeconds: number;
  /** The clock idleness is measured on (Date.now): the one the requests' moments come from. */
  readonly now?: () => number;
}

/** What an instance keeps per organization, beside the admission itself (src/usage/README.md, "Bounded state"). */
export interface TrackedState {
  readonly ledger: UsageLedger;
  /** Organizations this instance keeps anything for: the `gateway_organizations_tracked` metric. */
  trackedOrganizations(): number;
}

/** The step after authentication (src/usage/README.md, "Request limit and ceiling"). */
export interface Admission {
  /**
   * Rejects with LimiterUnavailable when the limit or the ceiling cannot be enforced. An admission that
   * decides in memory answers at once, without a promise.
   */
  take(organizationId: string, nowMs: number, usage?: CallerUsage): Grant | Promise<Grant>;
  /** False while the limit cannot be enforced (Redis not answering). */
  available(): boolean;
  close(): Promise<void>;
}

/** Headroom (calls) below which an organization counts as near its ceiling: verified on every request, usage sent at once. */
export const NEAR_CEILING_MARGIN = 100;

/** Seconds a consumer should wait after the limit could not be enforced: reconnecting takes at most a few. */
const RETRY_AFTER_SECONDS = 2;

/** The limit or the ceiling cannot be enforced now (Redis unreachable or slow): 503, never let through. */
export class LimiterUnavailable extends ApiError {
  constructor(policy: { readonly limit: number; readonly windowSeconds: number }, options: { cause: unknown }) {
    super('SERVICE_UNAVAILABLE', 'The request limit cannot be enforced right now. Retry later.', {
      reason: 'limiter_unavailable',
      headers: {
        'Retry-After': String(RETRY_AFTER_SECONDS),
        ...rateLimitFields({ ...policy, remaining: 0, resetSeconds: RETRY_AFTER_SECONDS }),
      },
      cause: options.cause,
    });
  }
}

/** An admitted request's grant: `settle` runs once, for keep or giveBack, whichever comes first. Fields
 * spelled out, not spread: Node 20's V8 builds an object spread followed by more fields slowly. */
export function granted(
  policy: { readonly limit: number; readonly windowSeconds: number },
  resetSeconds: number,
  remaining: number,
  settle: (kept: boolean, limitToo: boolean) => void,
): Grant {
  let settled = false;
  const once = (kept: boolean, limitToo: boolean): void => {
    if (settled) return;
    settled = true;
    settle(kept, limitToo);
  };
  return {
    limit: policy.limit,
    windowSeconds: policy.windowSeconds,
    resetSeconds,
    remaining,
    allowed: true,
    ceilingReached: false,
    ceilingInDoubt: false,
    keep: () => once(true, false),
    giveBack: (limitToo) => once(false, limitToo),
  };
}

/** A refusal: nothing taken, nothing to give back. */
export function refused(
  decision: { limit: number; resetSeconds: number; windowSeconds: number },
  remaining: number,
  ceilingReached: boolean,
  ceilingInDoubt = false,
): Grant {
  const grant = { ...decision, allowed: false, remaining: Math.max(0, remaining), ceilingReached, ceilingInDoubt };
  return { ...grant, keep() {}, giveBack() {} };
}
