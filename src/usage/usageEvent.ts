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

/** One successful call as recorded: its id and time text are made when it joins a round, which spares the heap under load. */
export interface RecordedCall {
  readonly principal: Principal;
  readonly route: string;
  readonly atMs: number;
}

/** The event of a recorded call, with its own id from now on. */
export function toUsageEvent(call: RecordedCall): UsageEvent {
  return {
    id: randomUUID(),
    keyId: call.principal.keyId,
    organizationId: call.principal.organizationId,
    route: call.route,
    at: new Date(call.atMs).toISOString(),
  };
}
