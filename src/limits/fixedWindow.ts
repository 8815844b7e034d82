/**
 * Fixed windows of `windowMs`, aligned to the epoch, so every instance (with a
 * synchronized clock) agrees on which window a moment belongs to and when it ends.
 */
export interface FixedWindow {
  /** Which window: floor(now / windowMs). Part of the limiter key. */
  readonly index: number;
  /** Whole seconds until the window ends, at least 1 (RateLimit `t`, Retry-After). */
  readonly resetSeconds: number;
}

export function fixedWindowAt(nowMs: number, windowMs: number): FixedWindow {
  const index = Math.floor(nowMs / windowMs);
  const endsAt = (index + 1) * windowMs;
  return { index, resetSeconds: Math.max(1, Math.ceil((endsAt - nowMs) / 1000)) };
}
