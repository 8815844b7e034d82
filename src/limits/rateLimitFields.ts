/**
 * The IETF rate-limit fields (draft-ietf-httpapi-ratelimit-headers): the policy
 * (quota q per window w seconds) and what is left of it (r requests, t seconds to reset).
 */
export function rateLimitFields(state: {
  limit: number;
  windowSeconds: number;
  remaining: number;
  resetSeconds: number;
}): { 'RateLimit-Policy': string; RateLimit: string } {
  return {
    'RateLimit-Policy': `"per-organization";q=${state.limit};w=${state.windowSeconds}`,
    RateLimit: `"per-organization";r=${state.remaining};t=${state.resetSeconds}`,
  };
}
