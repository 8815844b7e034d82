import pLimit, { type LimitFunction } from 'p-limit';
import { UpstreamError } from '../errors.js';

/**
 * How many platform calls one instance runs at once, overall and per organization.
 * Every figure lives here; the reasons are beside each.
 */
export const PLATFORM_SHARES = {
  // Bounds what one instance asks of the platform at once. With answers as quick as the
  // platform's, this many in flight is already more cold answers per second than one
  // instance's CPU serves; more would only move the queue from here to the platform.
  overall: 64,
  // A quarter of the overall cap: one organization's cold flood can hold at most a quarter
  // of the instance's platform calls, so at least three others still find their full share.
  perOrganization: 16,
  // Calls waiting for a free slot of their organization: one share's worth, so a waiting
  // call starts within about one platform answer. Waiting longer helps a client less than
  // a prompt 503.
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

/**
 * The shares are p-limit queues (a promise queue on microtasks), not bottleneck: bottleneck's
 * local store yields a timer turn at each step of every job (received, queued, running,
 * done), so each call waited several timer turns even with every slot free, and twice as
 * many through a Group chained to an overall limiter: longer than the platform's own answer.
 */
export function createOrganizationShares(): OrganizationShares {
  const shares = PLATFORM_SHARES;
  const overall = pLimit(shares.overall);
  // One queue per organization with calls held; dropped once it holds none.
  const perOrganization = new Map<string, LimitFunction>();
  // Dropped queues, empty and so interchangeable, kept for the next organization: making a
  // p-limit queue costs more than admitting a call through one. No more than can run at once.
  const spare: LimitFunction[] = [];

  const refused = (operation: string, why: string) =>
    new UpstreamError(
      'platform',
      'throttled',
      `${operation}: no room for another call (${why})`,
      shares.retryAfterSeconds,
    );

  return {
    async run(organizationId, operation, call) {
      let organization = perOrganization.get(organizationId);
      if (organization === undefined) {
        organization = spare.pop() ?? pLimit(shares.perOrganization);
        perOrganization.set(organizationId, organization);
      }
      // Admission counts every call a queue holds, running or waiting: beyond that, refuse now.
      if (held(organization) >= shares.perOrganization + shares.queuedPerOrganization)
        throw refused(operation, 'organization');
      if (held(overall) >= shares.overall + shares.queuedOverall) throw refused(operation, 'instance');
      const own = organization;
      try {
        // A call admitted within its organization's share then takes a slot of the overall cap.
        return await own(() => overall(call));
      } finally {
        if (held(own) === 0 && perOrganization.get(organizationId) === own) {
          perOrganization.delete(organizationId);
          if (spare.length < shares.overall) spare.push(own);
        }
      }
    },
  };
}

function held(limit: LimitFunction): number {
  return limit.activeCount + limit.pendingCount;
}
