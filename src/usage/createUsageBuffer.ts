import type { Principal } from '../auth/principal.js';
import { UpstreamError } from '../errors.js';
import { withDeadline } from '../upstream/deadline.js';
import { type RecordedCall, toUsageEvent } from './recordedCall.js';
import {
  adoptSpool,
  createDeliveryTimer,
  type DeliveryOptions,
  deliverySettings,
  SPOOL_WRITE_MS,
  sendBatch,
  spoolOrLose,
  tellLedger,
} from './usageDelivery.js';
import { countByOrganization, type UsageEvent } from './usageEvent.js';
import type { UsageRecorder } from './usageRecorder.js';

export type UsageBufferOptions = DeliveryOptions;

export interface UsageBuffer extends UsageRecorder {
  /** Claims what earlier instances spooled and delivers it with the rest; resolves with the count taken. */
  deliverSpooled(): Promise<number>;
}

/**
 * Counts successful calls: every record() becomes an event with its own UUID, kept
 * in memory until the key service acknowledges it. Events go out in batches of at
 * most `batchSize`, one call at a time; a failed batch is sent again (the same ids,
 * so nothing is counted twice) after a growing, jittered delay until it is accepted.
 * The one exception is a batch the service refuses as malformed (400): no retry can
 * change that answer, so it is logged with its size and dropped.
 */
export function createUsageBuffer(options: UsageBufferOptions): UsageBuffer {
  const { sink, logger } = options;
  const settings = deliverySettings(options);
  const { batchSize, flushIntervalMs, now, isRejection, maxPending } = settings;

  /**
   * Recorded, not yet in a call: the least that must be kept per call. The id and the
   * RFC 3339 time are made when the entry joins a batch (and then kept for every retry):
   * under load each entry outlives a few young-generation collections, so whatever it
   * holds is promoted to the old generation as garbage (measured: the UUID and time
   * strings per call were the largest part of the gateway's old-generation growth).
   */
  const queue: Array<RecordedCall | UsageEvent> = [];
  /** The batch being sent, or waiting to be sent again after a failure. */
  let batch: UsageEvent[] | null = null;
  let pendingTotal = 0;
  let failures = 0;
  let sending = false;
  let closing = false;
  /** A call of an organization near its ceiling waits in the queue. */
  let hurry = false;
  let stopped = false;
  const drainedWaiters: Array<() => void> = [];
  /** What an earlier instance spooled: its files go once every event is acknowledged (or dropped). */
  const spooled = adoptSpool(options.spool, options.ledger, logger);

  const timer = createDeliveryTimer({
    look: () => void pump(),
    canArm: () => !stopped && !sending,
    keepsAlive: () => closing,
  });

  const settle = (events: readonly UsageEvent[]): void => {
    pendingTotal -= events.length;
    if (pendingTotal === 0) for (const wake of drainedWaiters.splice(0)) wake();
    spooled.safe(events);
  };

  /** Sends batches one call at a time while there is something worth sending now. */
  const pump = async (): Promise<void> => {
    if (sending || stopped) return;
    sending = true;
    try {
      while (!stopped) {
        if (batch === null) {
          // Outside shutdown, a partial batch waits for the flush interval to fill up.
          if (queue.length === 0) break;
          batch = queue.splice(0, batchSize).map(toUsageEvent);
          hurry = false;
          tellLedger(options.ledger, batch, 'sending');
        }
        const current = batch;
        try {
          await sendBatch(sink, current, logger);
          batch = null;
          failures = 0;
          tellLedger(options.ledger, current, 'acknowledged');
          settle(current);
          options.onFlushed?.(current.length);
        } catch (err: unknown) {
          if (isRejection(err)) {
            logger.error(
              { err, dropped: current.length, organizations: countByOrganization(current) },
              'usage batch refused by the key service as malformed: dropped, these calls are not counted',
            );
            batch = null;
            tellLedger(options.ledger, current, 'dropped');
            settle(current);
            continue;
          }
          failures += 1;
          options.onFlushFailed?.(current.length);
          const delay = settings.retryDelayMs(failures, closing, err);
          logger.warn(
            { err, attempt: failures, retryInMs: delay, pending: pendingTotal },
            'usage batch not recorded: retrying',
          );
          sending = false;
          timer.schedule(delay, true);
          return;
        }
        if (!closing && !hurry && queue.length < batchSize) break;
      }
    } finally {
      sending = false;
    }
    if (queue.length > 0) timer.schedule(closing ? 0 : flushIntervalMs, false);
  };

  /** What is left at the deadline goes to the spool; only when that fails too is it lost. */
  const keepUndelivered = (): Promise<void> =>
    // A batch on its way may have been counted already: spooled too, its ids make the resend harmless.
    spoolOrLose([...(batch ?? []), ...queue.map(toUsageEvent)], options.spool, logger, 'delivered');

  return {
    ensureRoom(): void {
      // Counting is what lets a call through (like the key check): while the key service
      // takes no usage and the backlog is full, fail closed rather than serve uncounted.
      if (pendingTotal >= maxPending) {
        throw new UpstreamError(
          'key-service',
          'throttled',
          `usage: ${pendingTotal} events waiting for the key service`,
        );
      }
    },

    record(principal: Principal, route: string): void {
      if (stopped) {
        logger.error({ organizationId: principal.organizationId, route }, 'usage recorded after shutdown: not counted');
        return;
      }
      queue.push({ principal, route, atMs: now().getTime() });
      pendingTotal += 1;
      // Near the ceiling other instances must see this call soon: no waiting for companions.
      const urgent = options.ledger?.isNearCeiling(principal.organizationId) ?? false;
      if (urgent) hurry = true;
      if (queue.length >= batchSize || closing || urgent) timer.soon();
      else timer.schedule(flushIntervalMs, false);
    },

    pendingTotal(): number {
      return pendingTotal;
    },

    async deliverSpooled(): Promise<number> {
      if (stopped) return 0;
      const events = await spooled.take();
      if (events.length === 0) return 0;
      queue.push(...events);
      pendingTotal += events.length;
      logger.info({ events: events.length }, 'usage events from the spool: delivering');
      timer.soon();
      return events.length;
    },

    async close(deadlineMs: number): Promise<void> {
      const drainMs = options.spool ? Math.max(0, deadlineMs - SPOOL_WRITE_MS) : deadlineMs;
      if (!closing) {
        closing = true;
        // Whatever waits, waits no longer: send now (a backoff is shortened to the closing cap).
        timer.clear();
        void pump();
      }
      if (pendingTotal > 0) {
        const drained = new Promise<void>((resolve) => drainedWaiters.push(resolve));
        await withDeadline(Math.max(0, drainMs), () => drained, 'usage flush').catch(() => undefined);
      }
      stopped = true;
      timer.clear();
      if (pendingTotal > 0) await keepUndelivered();
    },
  };
}
