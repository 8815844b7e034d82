import type { Logger } from 'pino';
import { ApiError, UpstreamError } from '../errors.js';
import { inSpan } from '../telemetry/spans.js';
import { retryDelayMs } from '../upstream/backoff.js';
import { withDeadline } from '../upstream/deadline.js';
import {
  countByOrganization,
  isRejectedBatch,
  MAX_USAGE_BATCH,
  type UsageEvent,
  type UsageSink,
} from './usageEvent.js';
import type { UsageLedger } from './usageLedger.js';
import { createMemoryQueue, eventsOf, type QueueHooks, type Round, type UsageQueue } from './usageQueue.js';
import type { UsageRecorder } from './usageRecorder.js';
import type { UsageSpool } from './usageSpool.js';

export interface UsageBufferOptions {
  readonly sink: UsageSink;
  readonly logger: Logger;
  /** Events per call to the key service: 1 to 1000 (the default). */
  readonly batchSize?: number;
  /** How long recorded calls may wait for companions. Default 1000 ms. */
  readonly flushIntervalMs?: number;
  readonly now?: () => Date;
  /** Backoff after a failed call: first delay and cap, defaults 250 ms and 30 s. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly random?: () => number;
  /** Events kept at most (default DEFAULT_MAX_PENDING); beyond, calls are refused with 503 (ensureRoom). */
  readonly maxPending?: number;
  /** Metrics, per batch. */
  readonly onFlushed?: (events: number) => void;
  readonly onFlushFailed?: (events: number) => void;
  /** The ceiling's count, told per organization what became of the calls. */
  readonly ledger?: UsageLedger;
  /** Where what is left at the shutdown deadline goes, and what others left is taken from. */
  readonly spool?: UsageSpool;
  /** Where counted calls are kept: in memory (the default), or with a copy in Redis (redisUsageQueue). */
  readonly queue?: (hooks: QueueHooks) => UsageQueue;
}

export interface UsageBuffer extends UsageRecorder {
  /** Claims what the spool holds and delivers it with the rest; resolves with the count taken. */
  deliverSpooled(): Promise<number>;
}

/** Events kept at most unless told otherwise: about 60 MB of heap. */
export const DEFAULT_MAX_PENDING = 1_000_000;
/** A full backlog drains in batches of a thousand: a few seconds. */
const BACKLOG_RETRY_AFTER_SECONDS = 5;
/** While closing, retries come quickly: the deadline, not the backoff, bounds the wait. */
const CLOSING_RETRY_MAX_MS = 500;
/** Kept back from the shutdown deadline to write to the spool what is left. */
const SPOOL_WRITE_MS = 1_000;

/** The one usage delivery loop (README.md, "The delivery loop"): one call to the key service at a time. */
export function createUsageBuffer(options: UsageBufferOptions): UsageBuffer {
  const { sink, logger, ledger, spool } = options;
  const batchSize = Math.min(MAX_USAGE_BATCH, Math.max(1, options.batchSize ?? MAX_USAGE_BATCH));
  const flushIntervalMs = options.flushIntervalMs ?? 1000;
  const now = options.now ?? (() => new Date());
  const maxPending = options.maxPending ?? DEFAULT_MAX_PENDING;
  const tell = (
    events: readonly UsageEvent[],
    step: 'adopted' | 'sending' | 'acknowledged' | 'dropped' | 'repeated',
  ): void => {
    if (!ledger) return;
    for (const [organizationId, calls] of Object.entries(countByOrganization(events)))
      ledger[step](organizationId, calls);
  };
  const queue = (options.queue ?? ((hooks) => createMemoryQueue(hooks.perRound)))({
    perRound: batchSize,
    wake: () => timer.soon(),
    adopted: (events) => tell(events, 'adopted'),
    stored: (events) => spool?.safe(events),
  });

  /** The batch being sent, or waiting to be sent again after a failure. */
  let batch: Round[] | null = null;
  let failures = 0;
  let sending = false;
  let closing = false;
  let stopped = false;
  /** A call of an organization near its ceiling waits: other instances must see it soon. */
  let hurry = false;
  const drainedWaiters: Array<() => void> = [];
  /** The loop's one pending run: "soon" replaces a wait for companions, never a backoff. It keeps the process up only while closing. */
  let armed: { handle: NodeJS.Timeout; backoff: boolean } | null = null;
  const timer = {
    schedule(delayMs: number, backoff: boolean): void {
      if (armed || stopped || sending) return;
      const handle = setTimeout(() => {
        armed = null;
        void pump();
      }, delayMs);
      if (!closing) handle.unref();
      armed = { handle, backoff };
    },
    soon(): void {
      if (armed && !armed.backoff) timer.clear();
      timer.schedule(0, false);
    },
    clear(): void {
      if (armed) clearTimeout(armed.handle);
      armed = null;
    },
  };
  // Claims left by an instance killed while delivering are taken over once their lease lapses.
  const spoolLook = spool
    ? setInterval(() => {
        deliverSpooled().catch((err: unknown) => logger.error({ err }, 'usage spool could not be read'));
      }, spool.leaseMs).unref()
    : null;

  const retryDelay = (err: unknown): number =>
    retryDelayMs(failures, {
      baseMs: options.retryBaseMs ?? 250,
      maxMs: Math.min(options.retryMaxMs ?? 30_000, closing ? CLOSING_RETRY_MAX_MS : Number.POSITIVE_INFINITY),
      random: options.random ?? Math.random,
      retryAfterSeconds: err instanceof UpstreamError ? err.retryAfterSeconds : undefined,
    });

  /** Adopted calls may come in two copies (Redis's and a spool's, at a deadline): each acknowledgement is told once. */
  const acknowledge = async (rounds: readonly Round[]): Promise<void> => {
    tell(eventsOf(rounds.filter((round) => !round.adopted)), 'acknowledged');
    const adopted = eventsOf(rounds.filter((round) => round.adopted));
    if (adopted.length === 0) return;
    const first = new Set(await queue.acknowledgedOnce(adopted));
    tell(
      adopted.filter((event) => first.has(event)),
      'acknowledged',
    );
    tell(
      adopted.filter((event) => !first.has(event)),
      'repeated',
    );
  };

  const finish = async (current: Round[], step: 'acknowledged' | 'dropped'): Promise<void> => {
    batch = null;
    queue.finish(current);
    const events = eventsOf(current);
    if (step === 'acknowledged') await acknowledge(current);
    else tell(events, step);
    spool?.safe(events);
    if (queue.size() === 0) for (const wake of drainedWaiters.splice(0)) wake();
  };

  /** One call per `batchSize` events (a round another instance wrote may be larger); a receipt that does not add up is said. */
  const send = async (events: readonly UsageEvent[]): Promise<void> => {
    for (let start = 0; start < events.length; start += batchSize) {
      const piece = events.slice(start, start + batchSize);
      const receipt = await inSpan('usage.flush', () => sink.recordUsage(piece), {
        root: true,
        attributes: { 'usage.events': piece.length },
      });
      if (receipt.accepted + receipt.duplicates !== piece.length) {
        logger.warn({ sent: piece.length, ...receipt }, 'usage receipt does not add up to the batch sent');
      }
    }
  };

  /** Sends batches one call at a time while there is something worth sending now. */
  const pump = async (): Promise<void> => {
    if (sending || stopped) return;
    sending = true;
    try {
      while (!stopped) {
        if (batch === null) {
          const next = queue.take(batchSize);
          if (next.length === 0) break;
          batch = next;
          hurry = false;
          tell(eventsOf(batch), 'sending');
        }
        const current = batch;
        const events = eventsOf(current);
        try {
          await send(events);
        } catch (err: unknown) {
          if (isRejectedBatch(err)) {
            logger.error(
              { err, dropped: events.length, organizations: countByOrganization(events) },
              'usage batch refused by the key service as malformed: dropped, these calls are not counted',
            );
            await finish(current, 'dropped');
            continue;
          }
          failures += 1;
          options.onFlushFailed?.(events.length);
          const delay = retryDelay(err);
          logger.warn(
            { err, attempt: failures, retryInMs: delay, pending: queue.size() },
            'usage batch not recorded: retrying',
          );
          sending = false;
          timer.schedule(delay, true);
          return;
        }
        failures = 0;
        await finish(current, 'acknowledged');
        options.onFlushed?.(events.length);
        // Outside shutdown, a partial batch waits for the flush interval to fill up.
        if (!closing && !hurry && queue.unsent() < batchSize) break;
      }
    } finally {
      sending = false;
    }
    if (queue.unsent() > 0) timer.schedule(closing ? 0 : flushIntervalMs, false);
  };

  const deliverSpooled = async (): Promise<number> => {
    const events = stopped || !spool ? [] : await spool.claim();
    if (events.length === 0) return 0;
    queue.add(events);
    tell(events, 'adopted');
    logger.info({ events: events.length }, 'usage events from the spool: delivering');
    timer.soon();
    return events.length;
  };

  /** What only this process has at the deadline goes to the spool; only when that fails too is it lost. */
  const keepUnsaved = async (left: readonly UsageEvent[]): Promise<void> => {
    const spooled = await spool?.write(left).then(
      () => true,
      (err: unknown) => logger.error({ err }, 'usage spool cannot be written'),
    );
    if (!spooled) {
      logger.error({ lost: left.length }, 'usage events not delivered before the shutdown deadline: lost');
      throw new Error('usage events lost');
    }
    logger.warn({ spooled: left.length }, 'usage events not delivered before the shutdown deadline: spooled');
    spool?.safe(left);
  };

  return {
    ensureRoom(): void {
      // Counting is what lets a call through: fail closed rather than serve uncounted.
      if (queue.size() >= maxPending) {
        throw new ApiError('SERVICE_UNAVAILABLE', 'Usage cannot be counted right now. Retry later.', {
          reason: 'usage_backlog',
          headers: { 'Retry-After': String(BACKLOG_RETRY_AFTER_SECONDS) },
        });
      }
    },

    record(principal, route): void {
      if (stopped) {
        logger.error({ organizationId: principal.organizationId, route }, 'usage recorded after shutdown: not counted');
        return;
      }
      queue.push(principal, route, now().getTime());
      const urgent = ledger?.isNearCeiling(principal.organizationId) ?? false;
      if (urgent) hurry = true;
      if (queue.unsent() >= batchSize || closing || urgent) timer.soon();
      else timer.schedule(flushIntervalMs, false);
    },

    pendingTotal: () => queue.size(),

    deliverSpooled,

    async close(deadlineMs: number): Promise<void> {
      const deadline = Date.now() + deadlineMs - (spool ? SPOOL_WRITE_MS : 0);
      if (spoolLook) clearInterval(spoolLook);
      if (!closing) {
        closing = true;
        // Whatever waits, waits no longer: send now (a backoff is shortened to the closing cap).
        timer.clear();
        void pump();
      }
      const drainMs = deadline - queue.closeMs - Date.now();
      if (queue.size() > 0 && drainMs > 0) {
        const drained = new Promise<void>((resolve) => drainedWaiters.push(resolve));
        await withDeadline(drainMs, () => drained, 'usage delivery').catch(() => undefined);
      }
      stopped = true;
      timer.clear();
      const unsaved = await queue.close(deadline);
      // A batch on its way may have been counted already: kept too, its ids make the resend harmless.
      if (unsaved.length > 0) await keepUnsaved(unsaved);
    },
  };
}
