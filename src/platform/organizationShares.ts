import Bottleneck from 'bottleneck';
import { UpstreamError } from '../errors.js';

/**
 * How many platform calls one instance runs at once, overall and per organization.
 * Every figure lives here; the reasons are beside each.
 */
export const PLATFORM_SHARES = {
  // Bounds what one instance asks of the platform at once. Platform answers take a few
  // milliseconds, so this many in flight is already more cold answers per second than one
  // instance's CPU serves; more would only move the queue from here to the platform.
  overall: 64,
  // A quarter of the overall cap: one organization's cold flood can hold at most a quarter
  // of the instance's platform calls, so at least three others still find their full share.
  perOrganization: 16,
  // Calls waiting for a free slot of their organization: one share's worth, about one
  // platform answer time of waiting. Waiting longer helps a client less than a prompt 503.
  queuedPerOrganization: 16,
  // Calls waiting for the overall cap, for the same reason: one cap's worth.
  queuedOverall: 64,
  // What a call refused for lack of room tells the client (Retry-After): a slot frees
  // within milliseconds, so the shortest wait HTTP can express.
  retryAfterSeconds: 1,
} as const;

export interface OrganizationShares {
  /** Runs `call` within `organizationId`'s share and the overall cap; refused as throttled (503 + Retry-After) beyond them. */
  run<T>(organizationId: string, operation: string, call: () => Promise<T>): Promise<T>;
}

export function createOrganizationShares(shares: typeof PLATFORM_SHARES = PLATFORM_SHARES): OrganizationShares {
  const overall = new Bottleneck({ maxConcurrent: shares.overall });
  const perOrganization = new Bottleneck.Group({ maxConcurrent: shares.perOrganization });
  // A call admitted within its organization's share then takes a slot of the overall cap.
  perOrganization.on('created', (limiter: Bottleneck) => {
    limiter.chain(overall);
  });

  const refused = (operation: string, why: string) =>
    new UpstreamError('platform', 'throttled', `${operation}: no room for another call (${why})`, shares.retryAfterSeconds);

  return {
    run(organizationId, operation, call) {
      // Admission counts every call a limiter holds (received, queued or running): calls
      // scheduled in one burst are all still "received" when the next one arrives, and a
      // bound on the queue alone (bottleneck's highWater) would admit most of a burst.
      const limiter = perOrganization.key(organizationId);
      if (held(limiter) >= shares.perOrganization + shares.queuedPerOrganization) return Promise.reject(refused(operation, 'organization'));
      if (held(overall) >= shares.overall + shares.queuedOverall) return Promise.reject(refused(operation, 'instance'));
      return limiter.schedule(call);
    },
  };
}

function held(limiter: Bottleneck): number {
  const counts = limiter.counts();
  return counts.RECEIVED + counts.QUEUED + counts.RUNNING + counts.EXECUTING;
}
