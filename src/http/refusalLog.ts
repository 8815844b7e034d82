import type { Logger } from 'pino';

export interface RefusalLogOptions {
  /**
   * Individual lines per second for refused unauthenticated requests. Default 20: a few KB a
   * second, enough to see who is knocking, and far under the 5 MB a minute a flood may add.
   */
  readonly linesPerSecond?: number;
  /** How often the counts of the refusals not written one by one are logged. Default 10 s. */
  readonly summaryEveryMs?: number;
}

export interface RefusalLog {
  /** Whether this refusal gets its own line; if not, it is counted into the next summary line. */
  admit(reason: string): boolean;
  /** Writes what is counted and stops the timer. */
  close(): void;
}

/**
 * Anyone can send refused requests as fast as the network carries them, so one line per
 * request would let them fill the disk. Past a modest rate of individual lines, refusals
 * are counted by reason and written as one periodic line: the one exception to one log
 * line per request.
 */
export function createRefusalLog(logger: Logger, options: RefusalLogOptions = {}): RefusalLog {
  const linesPerSecond = options.linesPerSecond ?? 20;
  const summaryEveryMs = options.summaryEveryMs ?? 10_000;
  let secondStartedAt = 0;
  let linesThisSecond = 0;
  let counted = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  const summarize = (): void => {
    if (counted.size === 0) {
      clearInterval(timer);
      timer = undefined;
      return;
    }
    const byReason = Object.fromEntries(counted);
    let total = 0;
    for (const count of counted.values()) total += count;
    counted = new Map();
    logger.warn({ refused: total, byReason, periodMs: summaryEveryMs }, 'refused requests not logged one by one');
  };

  return {
    admit(reason) {
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
      if (timer === undefined) {
        timer = setInterval(summarize, summaryEveryMs);
        timer.unref(); // never keeps the process alive
      }
      return false;
    },
    close() {
      summarize();
      clearInterval(timer);
      timer = undefined;
    },
  };
}
