/** Exponential backoff up to `maxMs`, half random so instances that failed together do not retry together. */
export function retryDelayMs(
  attempt: number,
  options: { baseMs: number; maxMs: number; random: () => number; retryAfterSeconds?: number | undefined },
): number {
  const exponential = Math.min(options.maxMs, options.baseMs * 2 ** Math.max(0, attempt - 1));
  const jittered = exponential / 2 + options.random() * (exponential / 2);
  const asked = (options.retryAfterSeconds ?? 0) * 1000;
  return Math.round(Math.min(options.maxMs, Math.max(jittered, asked)));
}
