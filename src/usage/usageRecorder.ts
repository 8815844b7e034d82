import type { Principal } from '../auth/principal.js';

/** Counts successful calls toward the organization's usage. */
export interface UsageRecorder {
  /**
   * Throws (a busy key service: 503) while the events waiting for the key service have
   * reached their bound, so no answer is given that could not be counted.
   */
  ensureRoom(): void;
  record(principal: Principal, route: string): void;
  /** All events recorded here and not yet acknowledged (for metrics). */
  pendingTotal(): number;
  /** Delivers what it can until the deadline, then keeps the rest for another instance. */
  close(deadlineMs: number): Promise<void>;
}
