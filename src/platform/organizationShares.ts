import { ApiError } from '../errors.js';
import { DeadlineError } from '../upstream/deadline.js';

export const PLATFORM_SHARES = {
  // Already more cold answers per second than one instance's CPU serves.
  inFlight: 64,
  // All organizations together: a burst of a hundred calls waits rather than being refused.
  waiting: 256,
  // Places free within milliseconds: the shortest wait HTTP can express.
  retryAfterSeconds: 1,
} as const;

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
 * A fair queue (neither bottleneck nor p-limit serves several queues in turn under one cap): each freed place goes
 * to the next waiting organization. With the room full, the one holding the most gives up its newest call.
 */
export function createOrganizationShares() {
  let running = 0;
  let waiting = 0;
  const organizations = new Map<string, Organization>();
  // Organizations with a waiting call, the next to be served first (a Map keeps insertion order).
  const turns = new Map<string, Organization>();

  const refusal = () =>
    new ApiError('RATE_LIMITED', 'Too many calls of this organization at once. Retry later.', {
      reason: 'concurrency_share_exceeded',
      headers: { 'Retry-After': String(PLATFORM_SHARES.retryAfterSeconds) },
    });

  const late = () => new DeadlineError('no place for the platform call before its deadline');

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

  const serveTurns = (): void => {
    for (const organization of turns.values()) {
      if (running >= PLATFORM_SHARES.inFlight) return;
      const waiter = organization.waiting[0];
      if (waiter === undefined) continue;
      leave(waiter);
      // Its deadline passed while its timer was still to run: not sent.
      if (performance.now() >= waiter.deadline) {
        waiter.refuse(late());
        forgetIfIdle(organization);
        continue;
      }
      // Served: to the back of the line, if it still waits.
      turns.delete(organization.id);
      if (organization.waiting.length > 0) turns.set(organization.id, organization);
      running += 1;
      organization.running += 1;
      waiter.start();
    }
  };

  /** With the room full: the organization holding the most among the newcomer's and those with a waiter. */
  const biggestHolder = (newcomer: Organization): Organization => {
    const held = (org: Organization) => org.running + org.waiting.length + (org === newcomer ? 1 : 0);
    return [...turns.values()].reduce((biggest, org) => (held(org) > held(biggest) ? org : biggest), newcomer);
  };

  const wait = (organization: Organization, deadline: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const expire = () => {
        leave(waiter);
        forgetIfIdle(organization);
        reject(late());
      };
      const timer = setTimeout(expire, Math.max(0, deadline - performance.now()));
      const waiter: Waiter = { organization, deadline, start: resolve, refuse: reject, timer };
      organization.waiting.push(waiter);
      waiting += 1;
      if (!turns.has(organization.id)) turns.set(organization.id, organization);
    });

  return {
    /** Organizations with a call running or waiting: the only ones kept. */
    tracked: (): number => organizations.size,
    /** Runs `call` once a place is free, waiting up to `deadline` (a performance.now() time), or refuses 429. */
    async run<T>(organizationId: string, call: () => Promise<T>, deadline: number): Promise<T> {
      const organization = organizations.get(organizationId) ?? { id: organizationId, running: 0, waiting: [] };
      organizations.set(organizationId, organization);
      if (running < PLATFORM_SHARES.inFlight && waiting === 0) {
        running += 1;
        organization.running += 1;
      } else {
        if (waiting >= PLATFORM_SHARES.waiting) {
          const biggest = biggestHolder(organization);
          if (biggest === organization) {
            forgetIfIdle(organization);
            throw refusal();
          }
          const newest = biggest.waiting.at(-1);
          if (newest !== undefined) {
            leave(newest);
            newest.refuse(refusal());
            forgetIfIdle(biggest);
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
