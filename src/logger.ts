import { type Logger, pino } from 'pino';
import { activeTraceId } from './telemetry/spans.js';

/** About forty request lines. */
const LOG_BATCH_BYTES = 12 * 1024;

/** A quiet gateway's lines reach the log within this. */
const LOG_FLUSH_MS = 250;

/**
 * The process's logger: JSON lines on stdout, written synchronously from the event loop in batches
 * of LOG_BATCH_BYTES, else every LOG_FLUSH_MS, and what is left at exit. A crash that skips exit
 * (SIGKILL, out of memory) loses at most the batch held. `traceIds`: add the active trace's id to
 * every line (installed only with tracing on: without it, pino calls nothing extra per line).
 */
export function createLogger(level: string, options: { readonly traceIds?: boolean } = {}): Logger {
  const stdout = pino.destination({
    dest: 1,
    sync: true,
    // A write per line cost more CPU than the line itself (npm run bench); below sonic-boom's 16 KiB limit.
    minLength: LOG_BATCH_BYTES,
    periodicFlush: LOG_FLUSH_MS,
    // While stdout refuses writes (a full disk), lines beyond this are dropped, not kept in memory.
    maxLength: 8 * 1024 * 1024,
  });
  // A batch may be written from the periodic flush's timer, where an unhandled 'error' (a full
  // disk) would end the process: the gateway goes on serving instead, and says so once. (pino's
  // own handler takes only EPIPE: a log reader that went away.)
  let reported = false;
  stdout.on('error', (err: unknown) => {
    if (reported) return;
    reported = true;
    process.stderr.write(
      `log lines cannot be written to stdout: ${err instanceof Error ? err.message : String(err)}\n`,
    );
  });
  // pino writes out what is held at exit only for its asynchronous destinations. flush(), not
  // flushSync(): sonic-boom's flushSync retries a write to a closed pipe for ever, holding the exit.
  process.once('exit', () => {
    try {
      stdout.flush();
    } catch (_err: unknown) {
      // stdout is gone (its reader closed it): the lines have nowhere to go, and the exit goes on.
    }
  });
  if (options.traceIds !== true) return pino({ level }, stdout);
  // pino leaves out a field whose value is undefined: a line outside any trace has no traceId.
  return pino({ level, mixin: () => ({ traceId: activeTraceId() }) }, stdout);
}
