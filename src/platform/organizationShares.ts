import { ApiError } from '../errors.js';
import { DeadlineError } from '../upstream/deadline.js';

/**
 * How many platform calls one instance runs at once, and how many wait for a place.
 * Every figure lives here; the reasons are beside each.
 */
export const PLATFORM_SHARES = {
  // Bounds what one instance asks of the platform at once. With answers as quick as the
  // platform's, this many in flight is already more cold answers per second than one
  // instance's CPU serves; more would only move the queue from here to the platform.
  inFlight: 64,
  // Calls waiting for a place, all organizations together: four times the places, so a
  // burst from one client (a hundred calls at once) waits rather than being refused, while
  // a waiting call still starts within a few platform answers, well inside its deadline.
  waiting: 256,
  // What a call refused for lack of room tells the client (Retry-After): places free
  // within milliseconds, so the shortest wait HTTP can express.
  retryAfterSeconds: 1,
} as const;

export interface OrganizationShares {
  /**
   * Runs `call` once a place is free, waiting up to `deadline` (a performance.now() time;
   * then DeadlineError). Refused with 429 `concurrency_share_exceeded` when the waiting
   * room is full and the organization holds the most calls.
   */
  run<T>(organizationId: string, call: () => Promise<T>, deadline: number): Promise<T>;
}

interface Waiter {
  readonly organization: Organization;
  readonly deadline: number;
  readonly start: () => void;
  readonly refuse: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

interface Organization {
  readonly id: string;
  running: number;
  readonly waiting: Waiter[];
}

/**
 * A work-conserving fair queue, hand-written because neither bottleneck nor p-limit
 * serves several queues in turn under one cap: a call starts at once while a place is
 * free and nobody waits, so one organization alone may use every place; otherwise it
 * waits in its organization's queue, and each freed place goes to the next organization
 * in turn (round robin), so a quiet organization waits about one platform answer behind
 * a flooding one. When the waiting room is full, the organization holding the most
 * (running and waiting) gives up a call: the newcomer itself, or its newest waiter.
 */
export function createOrganizationShares(): OrganizationShares {
  const shares = PLATFORM_SHARES;
  let running = 0;
  let waiting = 0;
  const organizations = new Map<string, Organization>();
  // Organizations with a waiting call, the next to be served first (a Map keeps insertion order).
  const turns = new Map<string, Organization>();

  const refusal = () =>
    new ApiError('RATE_LIMITED', 'Too many calls of this organization at once. Retry later.', {
      reason: 'concurrency_share_exceeded',
      headers: { 'Retry-After': String(shares.retryAfterSeconds) },
    });

  const late = () => new DeadlineError('no place for the platform call before its deadline');

  const organizationOf = (id: string): Organization => {
    let organization = organizations.get(id);
    if (organization === undefined) {
      organization = { id, running: 0, waiting: [] };
      organizations.set(id, organization);
    }
    return organization;
  };

  const forgetIfIdle = (organization: Organization): void => {
    if (organization.running === 0 && organization.waiting.length === 0) organizations.delete(organization.id);
  };

  const leave = (waiter: Waiter): void => {
    const { organization } = waiter;
    organization.waiting.splice(organization.waiting.indexOf(waiter), 1);
    waiting -= 1;
    clearTimeout(waiter.timer);
    if (organization.waiting.length === 0) turns.delete(organization.id);
  };

  /** Gives free places to the organizations waiting, one call each in turn. */
  const serveTurns = (): void => {
    for (const organization of turns.values()) {
      if (running >= shares.inFlight) return;
      const waiter = organization.waiting[0];
      if (waiter === undefined) continue;
      leave(waiter);
      // Its deadline passed while its timer was still to run: not sent, as it would be refused.
      if (performance.now() >= waiter.deadline) {
        waiter.refuse(late());
        continue;
      }
      // Served: to the back of the line, if it still waits.
      if (organization.waiting.length > 0) {
        turns.delete(organization.id);
        turns.set(organization.id, organization);
      }
      running += 1;
      organization.running += 1;
      waiter.start();
    }
  };

  /** With the room full: the organization holding the most among the newcomer's and those with a waiter. */
  const biggestHolder = (newcomer: Organization): Organization => {
    let biggest = newcomer;
    let most = newcomer.running + newcomer.waiting.length + 1;
    for (const organization of turns.values()) {
      const held = organization.running + organization.waiting.length;
      if (held > most) {
        biggest = organization;
        most = held;
      }
    }
    return biggest;
  };

  const wait = (organization: Organization, deadline: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        organization,
        deadline,
        start: resolve,
        refuse: reject,
        timer: setTimeout(
          () => {
            leave(waiter);
            forgetIfIdle(organization);
            reject(late());
          },
          Math.max(0, deadline - performance.now()),
        ),
      };
      organization.waiting.push(waiter);
      waiting += 1;
      if (!turns.has(organization.id)) turns.set(organization.id, organization);
    });

  return {
    async run(organizationId, call, deadline) {
      const organization = organizationOf(organizationId);
      if (running < shares.inFlight && waiting === 0) {
        running += 1;
        organization.running += 1;
      } else {
        if (waiting >= shares.waiting) {
          const biggest = biggestHolder(organization);
          if (biggest === organization) {
            forgetIfIdle(organization);
            throw refusal();
          }
          const newest = biggest.waiting.at(-1);
          if (newest !== undefined) {
            leave(newest);
            newest.refuse(refusal());
          }
        }
        await wait(organization, deadline);
      }
      try {
        return await call();
      } finally {
        running -= 1;
        organization.running -= 1;
        serveTurns();
        forgetIfIdle(organization);
      }
    },
  };
}
