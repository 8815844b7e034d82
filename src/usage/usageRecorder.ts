import type { Principal } from '../auth/principal.js';

/** Counts successful calls toward the organization's usage. */
export interface UsageRecorder {
  /**
   * Throws (a busy key service: 503) while the events waiting for the key service have
   * reached their bound, so no answer is given that could not be counted.
   */
  ensureRoom(): void;
  record(principal: Principal, route: string): void;
  /** All events accepted here but not yet acknowledged (for metrics). */
  pendingTotal(): number;
  /** Sends every pending event; resolves when all were accepted or the deadline passed. */
  close(deadlineMs: number): Promise<void>;
}

/**
 * Events waiting for the key service at most, unless a buffer is told otherwise: in this
 * process (about 60 MB of heap), or in the Redis stream that every instance shares.
 */
export const DEFAULT_MAX_PENDING = 1_000_000;
