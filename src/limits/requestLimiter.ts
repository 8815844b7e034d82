/** The per-organization request limit, as the route middleware sees it. */
export interface LimitDecision {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /** Seconds until the window resets. */
  readonly resetSeconds: number;
  readonly windowSeconds: number;
}

export interface RequestLimiter {
  /** Takes one request from the organization's allowance. Throws ApiError 503 when the limit cannot be enforced. */
  take(organizationId: string): Promise<LimitDecision>;
  close(): Promise<void>;
}
