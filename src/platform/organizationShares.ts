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
  /** Runs `call` within `organizationId`'s share and the overall cap; throttled (503 + Retry-After) beyond them. */
  run<T>(organizationId: string, operation: string, call: () => Promise<T>): Promise<T>;
}

export function createOrganizationShares(shares: typeof PLATFORM_SHARES = PLATFORM_SHARES): OrganizationShares {
  // OVERFLOW: a call that finds the queue full is refused, never queued without bound.
  const overall = new Bottleneck({ maxConcurrent: shares.overall, highWater: shares.queuedOverall, strategy: Bottleneck.strategy.OVERFLOW });
  const perOrganization = new Bottleneck.Group({
    maxConcurrent: shares.perOrganization,
    highWater: shares.queuedPerOrganization,
    strategy: Bottleneck.strategy.OVERFLOW,
  });
  // A call admitted within its organization's share then takes a slot of the overall cap.
  perOrganization.on('created', (limiter: Bottleneck) => {
    limiter.chain(overall);
  });

  return {
    async run(organizationId, operation, call) {
      try {
        return await perOrganization.key(organizationId).schedule(call);
      } catch (err: unknown) {
        if (err instanceof Bottleneck.BottleneckError) {
          throw new UpstreamError('platform', 'throttled', `${operation}: no room for another call (${err.message})`, shares.retryAfterSeconds);
        }
        throw err;
      }
    },
  };
}
