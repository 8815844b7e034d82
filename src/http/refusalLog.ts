import type { Logger } from 'pino';

/** What a rationed log writes in place of the lines it holds back. */
interface Summary {
  readonly level: 'warn' | 'error';
  /** The count's field in the summary line. */
  readonly counted: string;
  readonly message: string;
}

/** How many lines a second are written one by one, and how often the rest are summed up. */
interface Ration {
  readonly linesPerSecond?: number;
  readonly summaryEveryMs?: number;
}

const REFUSALS: Summary = { level: 'warn', counted: 'refused', message: 'refused requests not logged one by one' };
const FAILURES: Summary = { level: 'error', counted: 'failed', message: 'failed requests not logged one by one' };

/**
 * Anyone can send refused requests as fast as the network carries them, so one line each would let
 * them fill the disk. Past `linesPerSecond` (a few KB a second: enough to see who is knocking), they
 * are counted by reason and written as one line every `summaryEveryMs`.
 */
export function createRefusalLog(logger: Logger, options: Ration = {}) {
  return createRationedLog(logger, REFUSALS, options);
}

/**
 * The same ration for requests that failed: a platform down under an organization's flood fails
 * every call it makes, and a line each would fill the disk as fast.
 */
export function createFailureLog(logger: Logger, options: Ration = {}) {
  return createRationedLog(logger, FAILURES, options);
}

export type RationedLog = ReturnType<typeof createRationedLog>;

function createRationedLog(logger: Logger, summary: Summary, { linesPerSecond = 20, summaryEveryMs = 10_000 }: Ration) {
  let secondStartedAt = 0;
  let linesThisSecond = 0;
  let counted = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;

  const summarize = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (counted.size === 0) return;
    let total = 0;
    for (const count of counted.values()) total += count;
    const byReason = Object.fromEntries(counted);
    counted = new Map();
    logger[summary.level]({ [summary.counted]: total, byReason, periodMs: summaryEveryMs }, summary.message);
  };

  return {
    /** Whether this line is written; if not, it is counted by `reason` into the next summary line. */
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
