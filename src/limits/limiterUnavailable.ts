import { ApiError } from '../errors.js';
import { rateLimitFields } from './rateLimitFields.js';

/** Seconds a consumer should wait after a 503: the limiter recovers within a few seconds of Redis returning. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * The limit cannot be enforced: deny rather than let the request through unlimited.
 * The rate-limit fields say the same: nothing can be granted until the retry.
 */
export function limiterUnavailable(policy: { limit: number; windowSeconds: number }, cause: unknown): ApiError {
  const retryAfter = UNAVAILABLE_RETRY_AFTER_SECONDS;
  return new ApiError('SERVICE_UNAVAILABLE', 'The request limit cannot be enforced right now. Retry later.', {
    reason: 'limiter_unavailable',
    headers: {
      'Retry-After': String(retryAfter),
      ...rateLimitFields({ ...policy, remaining: 0, resetSeconds: retryAfter }),
    },
    cause,
  });
}
