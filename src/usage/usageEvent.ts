import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { UsageEvent } from '../upstream/keyServiceContract.js';

/** One successful public call, as the key service's `POST /v1/usage` takes it. */
export type { UsageEvent };

/** Where batches of events go: the key service client's recordUsage. Throws when not recorded. */
export interface UsageSink {
  recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }>;
}

/** Events per call to the key service at most (its limit). */
export const MAX_USAGE_BATCH = 1000;

/** The key service refused the batch as malformed (400): sending the same events again cannot succeed. */
export function isRejectedBatch(err: unknown): boolean {
  return err instanceof Error && err.name === 'UsageRejectedError';
}

export function countByOrganization(events: readonly UsageEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const event of events) counts[event.organizationId] = (counts[event.organizationId] ?? 0) + 1;
  return counts;
}

/** The event of one recorded call (a successful call, by whom, on which route, when), with its own id from now on. */
export function toUsageEvent(principal: Principal, route: string, atMs: number): UsageEvent {
  return {
    id: randomUUID(),
    keyId: principal.keyId,
    organizationId: principal.organizationId,
    route,
    at: new Date(atMs).toISOString(),
  };
}
