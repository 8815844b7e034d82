import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/principal.js';
import type { UsageEvent } from './usageEvent.js';

/** One successful call as recorded: references to what the request already holds, and its time. */
export interface RecordedCall {
  readonly principal: Principal;
  readonly route: string;
  readonly atMs: number;
}

/**
 * The event of a recorded call, with its own id from now on; an event (spooled by an
 * earlier instance) keeps the id it has.
 */
export function toUsageEvent(call: RecordedCall | UsageEvent): UsageEvent {
  if ('id' in call) return call;
  return {
    id: randomUUID(),
    keyId: call.principal.keyId,
    organizationId: call.principal.organizationId,
    route: call.route,
    at: new Date(call.atMs).toISOString(),
  };
}
