/** Fixed windows aligned to the epoch: every instance (clocks in sync) agrees on a moment's window. */
export interface FixedWindow {
  /** floor(now / windowMs): part of the limit's key. */
  readonly index: number;
  /** Whole seconds until the window ends, at least 1 (RateLimit `t`, Retry-After). */
  readonly resetSeconds: number;
}

export function fixedWindowAt(nowMs: number, windowMs: number): FixedWindow {
  const index = Math.floor(nowMs / windowMs);
  return { index, resetSeconds: Math.max(1, Math.ceil(((index + 1) * windowMs - nowMs) / 1000)) };
}
