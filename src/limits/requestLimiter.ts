/** The per-organization request limit: plain values in, a decision out (no HTTP here). */
export interface LimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

export interface RequestLimiter {
  /**
   * Takes one request from the organization's allowance in the window `nowMs` falls in.
   * Throws (or rejects with) LimiterUnavailable when the limit cannot be enforced.
   */
  take(organizationId: string, nowMs: number): LimitDecision | Promise<LimitDecision>;
  close(): Promise<void>;
}

/** The limiter the gateway builds: a RequestLimiter that also tells readiness whether it can enforce. */
export interface ManagedRequestLimiter extends RequestLimiter {
  /** False while the limit cannot be enforced (Redis not answering). */
  available(): boolean;
}

/** Seconds a consumer should wait after the limit could not be enforced: reconnecting takes at most a few. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** The limit cannot be enforced now (Redis unreachable or slow): the request is denied, never let through unlimited. */
export class LimiterUnavailable extends Error {
  readonly retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS;

  constructor(
    readonly policy: { readonly limit: number; readonly windowSeconds: number },
    options?: { cause: unknown },
  ) {
    super('the request limit cannot be enforced', options);
    this.name = 'LimiterUnavailable';
  }
}
