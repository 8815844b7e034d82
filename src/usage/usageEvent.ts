import { UpstreamError } from '../errors.js';
import type { UsageEvent } from '../upstream/keyServiceContract.js';

/** One successful public call, as the key service's `POST /v1/usage` takes it: the client's own type. */
export type { UsageEvent };

/** Where batches of events go: the key service client's recordUsage. Throws when not recorded. */
export interface UsageSink {
  recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }>;
}

/** Events per call to the key service at most (its limit). */
export const MAX_USAGE_BATCH = 1000;

/** The key service refused the batch as malformed: retrying the same events cannot succeed. */
export function isRejectedBatch(err: unknown): boolean {
  if (err instanceof Error && err.name === 'UsageRejectedError') return true;
  return err instanceof UpstreamError && err.upstream === 'key-service' && /\bstatus 400\b/.test(err.detail);
}

export function countByOrganization(events: readonly UsageEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const event of events) counts[event.organizationId] = (counts[event.organizationId] ?? 0) + 1;
  return counts;
}
