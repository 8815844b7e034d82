import type { Principal } from '../auth/principal.js';

/** Counts successful calls toward the organization's usage. */
export interface UsageRecorder {
  /** Throws (503) while the events waiting for the key service are at their bound: no answer goes uncounted. */
  ensureRoom(): void;
  record(principal: Principal, route: string): void;
  /** Events recorded here and not yet acknowledged (for metrics). */
  pendingTotal(): number;
  /** Delivers what it can until the deadline, then keeps the rest for another instance. */
  close(deadlineMs: number): Promise<void>;
}
