/**
 * When the key service's event stream counts as alive. The service sends `: ping` every
 * 15 s (key-service.md), so an open connection that delivered no byte for longer than
 * that, plus a margin for a late ping or a late timer here, may be partitioned or held by
 * a proxy: events may be missing, and nothing cached may be trusted.
 */

export const EVENT_PING_INTERVAL_MS = 15_000;
const LATE_PING_MARGIN_MS = 3_000;
/** Bytes within this window prove the stream alive; a revocation is refused at most this long after the last byte. */
export const EVENT_LIVENESS_MS = EVENT_PING_INTERVAL_MS + LATE_PING_MARGIN_MS;

export interface Liveness {
  /** Bytes arrived. */
  touch(): void;
  /** Whether the last bytes arrived within the window (never, before the first touch). */
  isAlive(): boolean;
}

export function createLiveness(windowMs: number, now: () => number = () => performance.now()): Liveness {
  let lastByteAt = Number.NEGATIVE_INFINITY;
  return {
    touch() {
      lastByteAt = now();
    },
    isAlive: () => now() - lastByteAt <= windowMs,
  };
}
