import type { UsageEvent } from '../upstream/keyServiceClient.js';

/** One successful public call, as the key service's `POST /v1/usage` takes it: the client's own type. */
export type { UsageEvent };

/** Where batches of events go: the key service client's recordUsage. Throws when not recorded. */
export interface UsageSink {
  recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }>;
}
