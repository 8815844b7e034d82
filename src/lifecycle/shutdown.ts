import type { Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { withDeadline } from '../upstream/deadline.js';

export interface ShutdownOptions {
  readonly server: Server;
  /** Run in order once no request is left, each told the milliseconds left. */
  readonly closers: ReadonlyArray<(remainingMs: number) => Promise<void>>;
  readonly logger: Logger;
  /**
   * After a SIGTERM only, how long the instance keeps serving (each answer with Connection: close)
   * while its readiness fails, so the load balancer stops sending before it stops listening. Default 0.
   */
  readonly delayMs?: number;
  /** Called at once, before the delay (readiness turns 503). */
  readonly onDraining?: () => void;
  /** From the end of the delay to the exit. Default SHUTDOWN_DEADLINE_MS. */
  readonly deadlineMs?: number;
  /** How long requests in flight may take before their connections are cut. Default 60 % of the deadline. */
  readonly drainMs?: number;
  /** Default SIGTERM and SIGINT, and process.exit. */
  readonly signals?: readonly NodeJS.Signals[];
  readonly exit?: (code: number) => void;
  /** Answers a request still running at the drain limit that has sent nothing yet; without it, it is cut. */
  readonly answerUnfinished?: (res: ServerResponse) => void;
}

/** `shutdown(reason)` starts it (every later call gets the same run) and resolves with the exit code. */
export type ShutdownHandle = ReturnType<typeof installShutdown>;

/** How long a shutdown may take, from the signal (after the drain delay) to the exit. */
export const SHUTDOWN_DEADLINE_MS = 10_000;
/** Time kept back from the closers for the last log line and the exit. */
const EXIT_MARGIN_MS = 200;

/**
 * One orderly shutdown, however many signals arrive (the process group and the process may both get a
 * SIGTERM): later ones change nothing, so the default action (exit at once, losing usage) never runs.
 * Order: readiness fails; after a SIGTERM, keep serving for delayMs; stop accepting connections; let
 * requests in flight finish until the drain limit, then answer those that sent nothing and cut the
 * rest; the closers in order; exit 0, or 1 if a step failed or the deadline passed.
 */
export function installShutdown(options: ShutdownOptions) {
  const { server, closers, logger, answerUnfinished } = options;
  const deadlineMs = options.deadlineMs ?? SHUTDOWN_DEADLINE_MS;
  const drainMs = options.drainMs ?? Math.floor(deadlineMs * 0.6);
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const signals = options.signals ?? ['SIGTERM', 'SIGINT'];
  const inFlight = new Set<ServerResponse>();
  let run: Promise<number> | null = null;

  const track = (_req: unknown, res: ServerResponse): void => {
    inFlight.add(res);
    res.on('close', () => inFlight.delete(res)); // once per answer (createHttpServer.ts)
    // A request arriving on a kept-alive connection during the drain is served, then its connection closes.
    if (run) closeAfterAnswer(res);
  };
  server.on('request', track);

  const stop = async (reason: string): Promise<number> => {
    const started = Date.now();
    const delayMs = reason === 'SIGTERM' ? (options.delayMs ?? 0) : 0;
    const deadlineAt = started + delayMs + deadlineMs;
    const hardStop = setTimeout(() => {
      logger.error({ deadlineMs: delayMs + deadlineMs }, 'shutdown deadline passed: exiting now');
      exit(1);
    }, delayMs + deadlineMs).unref();

    options.onDraining?.();
    for (const res of inFlight) closeAfterAnswer(res);
    if (delayMs > 0) {
      logger.info({ reason, delayMs }, 'shutting down: not ready, still serving until the load balancer stops sending');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    logger.info(
      { reason, inFlight: inFlight.size },
      'shutting down: taking no new connections, finishing requests in flight',
    );
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    // Node closes only the connections idle at close(); those whose answer ends later would wait out keep-alive.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    const drainedInTime = await withDeadline(drainMs, () => drained, 'drain').then(
      () => true,
      () => false,
    );
    clearInterval(sweep);
    if (!drainedInTime) {
      const unanswered = answerUnfinished ? [...inFlight].filter((res) => !res.headersSent) : [];
      for (const res of unanswered) answerUnfinished?.(res);
      logger.warn(
        { unfinished: inFlight.size, answered: unanswered.length },
        'requests still running at the drain limit: answering those that sent nothing, cutting the rest',
      );
      if (unanswered.length === 0) server.closeAllConnections();
      else {
        // The answered connections close once their answer is written (Connection: close).
        for (const res of inFlight) if (!res.writableEnded) res.socket?.destroy();
        server.closeIdleConnections();
      }
    }

    let code = 0;
    for (const closer of closers) {
      const remainingMs = Math.max(0, deadlineAt - Date.now() - EXIT_MARGIN_MS);
      try {
        await withDeadline(remainingMs, () => closer(remainingMs), 'closer');
      } catch (err: unknown) {
        code = 1;
        logger.error({ err }, 'shutdown step failed');
      }
    }
    clearTimeout(hardStop);
    logger.info({ code, durationMs: Date.now() - started }, 'shutdown complete');
    exit(code);
    return code;
  };

  const shutdown = (reason: string): Promise<number> => {
    if (run) logger.info({ reason }, 'shutdown already in progress');
    run ??= stop(reason);
    return run;
  };
  const onSignal = (signal: NodeJS.Signals) => void shutdown(signal);
  for (const signal of signals) process.on(signal, onSignal);

  return {
    shutdown,
    uninstall(): void {
      for (const signal of signals) process.off(signal, onSignal);
      server.off('request', track);
    },
  };
}

function closeAfterAnswer(res: ServerResponse): void {
  if (!res.headersSent) res.setHeader('Connection', 'close');
}
