import { type Logger, pino } from 'pino';
import { activeTraceId } from './telemetry/spans.js';

export interface LoggerOptions {
  /** Add the active trace's id to every line written inside a traced request. */
  readonly traceIds?: boolean;
}

/**
 * Lines gathered before one write. On a busy gateway a write per line cost more CPU than
 * the line itself, and a 4 KiB batch still more than this one (npm run bench); it holds
 * about forty request lines. sonic-boom requires it below its largest write (16 KiB).
 */
const LOG_BATCH_BYTES = 12 * 1024;

/** How often the batch is written whatever its size: a quiet gateway's lines reach the log within this. */
const LOG_FLUSH_MS = 250;

/** The most held while stdout refuses writes (a full disk); lines beyond it are dropped, not kept in memory. */
const LOG_HELD_MAX_BYTES = 8 * 1024 * 1024;

/**
 * The process's logger: JSON lines on stdout, written in batches from the event loop
 * (synchronous writes of whole lines, no thread pool): a batch once it holds
 * LOG_BATCH_BYTES, else every LOG_FLUSH_MS, and what is left when the process exits.
 * A crash that skips exit (SIGKILL, out of memory) loses at most the batch held.
 * The trace-id mixin is installed only with tracing on: without it, pino calls nothing
 * extra per line.
 */
export function createLogger(level: string, options: LoggerOptions = {}): Logger {
  const stdout = pino.destination({
    dest: 1,
    sync: true,
    minLength: LOG_BATCH_BYTES,
    periodicFlush: LOG_FLUSH_MS,
    maxLength: LOG_HELD_MAX_BYTES,
  });
  // A batch may be written from the periodic flush's timer, where an unhandled 'error' (a
  // full disk) would end the process: the gateway goes on serving instead, and says so once.
  // (pino's own handler takes only EPIPE: a log reader that went away.)
  let reported = false;
  stdout.on('error', (err: unknown) => {
    if (reported) return;
    reported = true;
    process.stderr.write(
      `log lines cannot be written to stdout: ${err instanceof Error ? err.message : String(err)}\n`,
    );
  });
  // pino writes out what is held at exit only for its asynchronous destinations. flush(), not
  // flushSync(): this destination's flush is one synchronous write, and sonic-boom's flushSync
  // retries a write to a closed pipe for ever, which would hold the exit.
  process.once('exit', () => {
    try {
      stdout.flush();
    } catch (_err: unknown) {
      // stdout is gone (its reader closed it): the lines have nowhere to go, and the exit goes on.
    }
  });
  if (options.traceIds !== true) return pino({ level }, stdout);
  return pino(
    {
      level,
      mixin() {
        const traceId = activeTraceId();
        return traceId === undefined ? {} : { traceId };
      },
    },
    stdout,
  );
}
