import { fixedWindowAt } from './fixedWindow.js';
import type { ManagedRequestLimiter } from './requestLimiter.js';
import { createWindowCounts } from './windowCounts.js';

/**
 * The request limit without Redis: each process counts its own fixed windows, in
 * memory and synchronously (no timer, no promise on the hot path). With N instances
 * an organization gets up to N times the allowance; REDIS_URL (or sentinels, or a
 * cluster) makes the allowance one shared count.
 */
export function createLocalRequestLimiter(options: { requests: number; windowSeconds: number }): ManagedRequestLimiter {
  const { requests, windowSeconds } = options;
  const windowMs = windowSeconds * 1000;
  const counts = createWindowCounts();
  return {
    take(organizationId, nowMs) {
      const window = fixedWindowAt(nowMs, windowMs);
      const taken = counts.add(organizationId, window.index);
      return {
        allowed: taken <= requests,
        limit: requests,
        remaining: Math.max(0, requests - taken),
        resetSeconds: window.resetSeconds,
        windowSeconds,
      };
    },
    available: () => true,
    async close() {
      counts.clear();
    },
  };
}
