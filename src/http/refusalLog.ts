import type { Logger } from 'pino';

/**
 * Anyone can send refused requests as fast as the network carries them, so one line each would let
 * them fill the disk. Past `linesPerSecond` (a few KB a second: enough to see who is knocking), they
 * are counted by reason and written as one line every `summaryEveryMs`.
 */
export function createRefusalLog(logger: Logger, { linesPerSecond = 20, summaryEveryMs = 10_000 } = {}) {
  let secondStartedAt = 0;
  let linesThisSecond = 0;
  let counted = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  const summarize = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (counted.size === 0) return;
    let refused = 0;
    for (const count of counted.values()) refused += count;
    const byReason = Object.fromEntries(counted);
    counted = new Map();
    logger.warn({ refused, byReason, periodMs: summaryEveryMs }, 'refused requests not logged one by one');
  };

  return {
    /** Whether this refusal gets its own line; if not, it is counted into the next summary line. */
    admit(reason: string): boolean {
      const nowMs = performance.now();
      if (nowMs - secondStartedAt >= 1000) {
        secondStartedAt = nowMs;
        linesThisSecond = 0;
      }
      if (linesThisSecond < linesPerSecond) {
        linesThisSecond += 1;
        return true;
      }
      counted.set(reason, (counted.get(reason) ?? 0) + 1);
      timer ??= setTimeout(summarize, summaryEveryMs).unref(); // never keeps the process alive
      return false;
    },
    close: summarize,
  };
}
