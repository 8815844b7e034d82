import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import { UpstreamError } from '../errors.js';
import { retryDelayMs } from './retryDelay.js';
import type { UsageEvent, UsageSink } from './usageEvent.js';
import type { UsageRecorder } from './usageRecorder.js';
import { inSpan } from '../telemetry/spans.js';

export interface UsageBufferOptions {
  readonly sink: UsageSink;
  readonly logger: Logger;
  /** Events per call to the key service: 1 to 1000 (its limit), default 1000. */
  readonly batchSize?: number;
  /** How long an event may wait for companions before it is sent. Default 1000 ms. */
  readonly flushIntervalMs?: number;
  readonly now?: () => Date;
  /** Backoff after a failed call: first delay and cap. Defaults 250 ms and 30 s. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly random?: () => number;
  /**
   * Whether a failure means the service refused the batch itself (400 invalid_request),
   * so sending it again cannot help. Default: an error named 'UsageRejectedError'
   * (the key service client's), or an UpstreamError whose detail says status 400.
   */
  readonly isRejection?: (err: unknown) => boolean;
  /**
   * Events waiting for the key service at most (default 1 000 000, about 60 MB); beyond,
   * requests are refused with 503 until the key service takes some (see ensureRoom).
   */
  readonly maxPending?: number;
  /** Metrics hooks: a batch of this many events was acknowledged / failed to send (and will be retried). */
  readonly onFlushed?: (events: number) => void;
  readonly onFlushFailed?: (events: number) => void;
}

const MAX_BATCH = 1000;

/** One successful call as recorded: references to what the request already holds, and its time. */
interface RecordedCall {
  readonly principal: Principal;
  readonly route: string;
  readonly atMs: number;
}

function toUsageEvent(call: RecordedCall): UsageEvent {
  return {
    id: randomUUID(),
    keyId: call.principal.keyId,
    organizationId: call.principal.organizationId,
    route: call.route,
    at: new Date(call.atMs).toISOString(),
  };
}
/** While closing, retries come quickly: the deadline, not the backoff, bounds the wait. */
const CLOSING_RETRY_MAX_MS = 500;

/**
 * Counts successful calls: every record() becomes an event with its own UUID, kept
 * in memory until the key service acknowledges it. Events go out in batches of at
 * most `batchSize`, one call at a time; a failed batch is sent again (the same ids,
 * so nothing is counted twice) after a growing, jittered delay until it is accepted.
 * The one exception is a batch the service refuses as malformed (400): no retry can
 * change that answer, so it is logged with its size and dropped.
 */
export function createUsageBuffer(options: UsageBufferOptions): UsageRecorder {
  const { sink, logger } = options;
  const batchSize = Math.min(MAX_BATCH, Math.max(1, options.batchSize ?? MAX_BATCH));
  const flushIntervalMs = options.flushIntervalMs ?? 1000;
  const now = options.now ?? (() => new Date());
  const random = options.random ?? Math.random;
  const isRejection = options.isRejection ?? isRejectedBatch;
  const retryBaseMs = options.retryBaseMs ?? 250;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  const maxPending = options.maxPending ?? 1_000_000;

  /**
   * Recorded, not yet in a call: the least that must be kept per call. The id and the
   * RFC 3339 time are made when the entry joins a batch (and then kept for every retry):
   * under load each entry outlives a few young-generation collections, so whatever it
   * holds is promoted to the old generation as garbage (measured: the UUID and time
   * strings per call were the largest part of the gateway's old-generation growth).
   */
  const queue: RecordedCall[] = [];
  /** The batch being sent, or waiting to be sent again after a failure. */
  let batch: UsageEvent[] | null = null;
  const pendingByOrganization = new Map<string, number>();
  let pendingTotal = 0;
  let failures = 0;
  let sending = false;
  let timer: { handle: NodeJS.Timeout; backoff: boolean } | null = null;
  let closing = false;
  let stopped = false;
  const drainedWaiters: Array<() => void> = [];

  const schedule = (delayMs: number, backoff: boolean): void => {
    if (stopped || sending || timer) return;
    const handle = setTimeout(() => {
      timer = null;
      void pump();
    }, delayMs);
    // A buffer never keeps a process alive by itself, except while it is being closed.
    if (!closing) handle.unref();
    timer = { handle, backoff };
  };

  const sendSoon = (): void => {
    if (timer && !timer.backoff) {
      clearTimeout(timer.handle);
      timer = null;
    }
    schedule(0, false);
  };

  const settle = (events: readonly UsageEvent[]): void => {
    for (const event of events) {
      const left = (pendingByOrganization.get(event.organizationId) ?? 0) - 1;
      if (left > 0) pendingByOrganization.set(event.organizationId, left);
      else pendingByOrganization.delete(event.organizationId);
    }
    pendingTotal -= events.length;
    if (pendingTotal === 0) for (const wake of drainedWaiters.splice(0)) wake();
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
        }
        const current = batch;
        try {
          const receipt = await inSpan('usage.flush', () => sink.recordUsage(current), {
            root: true,
            attributes: { 'usage.events': current.length },
          });
          if (receipt.accepted + receipt.duplicates !== current.length) {
            logger.warn(
              { sent: current.length, accepted: receipt.accepted, duplicates: receipt.duplicates },
              'usage receipt does not add up to the batch sent',
            );
          }
          batch = null;
          failures = 0;
          settle(current);
          options.onFlushed?.(current.length);
        } catch (err: unknown) {
          if (isRejection(err)) {
            logger.error(
              { err, dropped: current.length, organizations: countByOrganization(current) },
              'usage batch refused by the key service as malformed: dropped, these calls are not counted',
            );
            batch = null;
            settle(current);
            continue;
          }
          failures += 1;
          options.onFlushFailed?.(current.length);
          const delay = retryDelayMs(failures, {
            baseMs: retryBaseMs,
            maxMs: closing ? Math.min(retryMaxMs, CLOSING_RETRY_MAX_MS) : retryMaxMs,
            random,
            retryAfterSeconds: err instanceof UpstreamError ? err.retryAfterSeconds : undefined,
          });
          logger.warn(
            { err, attempt: failures, retryInMs: delay, pending: pendingTotal },
            'usage batch not recorded: retrying',
          );
          sending = false;
          schedule(delay, true);
          return;
        }
        if (!closing && queue.length < batchSize) break;
      }
    } finally {
      sending = false;
    }
    if (queue.length > 0) schedule(closing ? 0 : flushIntervalMs, false);
  };

  return {
    ensureRoom(): void {
      // Counting is what lets a call through (like the key check): while the key service
      // takes no usage and the backlog is full, fail closed rather than serve uncounted.
      if (pendingTotal >= maxPending) {
        throw new UpstreamError('key-service', 'throttled', `usage: ${pendingTotal} events waiting for the key service`);
      }
    },

    record(principal: Principal, route: string): void {
      if (stopped) {
        logger.error({ organizationId: principal.organizationId, route }, 'usage recorded after shutdown: not counted');
        return;
      }
      queue.push({ principal, route, atMs: now().getTime() });
      pendingByOrganization.set(principal.organizationId, (pendingByOrganization.get(principal.organizationId) ?? 0) + 1);
      pendingTotal += 1;
      if (queue.length >= batchSize || closing) sendSoon();
      else schedule(flushIntervalMs, false);
    },

    pending(organizationId: string): number {
      return pendingByOrganization.get(organizationId) ?? 0;
    },

    pendingTotal(): number {
      return pendingTotal;
    },

    async close(deadlineMs: number): Promise<void> {
      if (!closing) {
        closing = true;
        // Whatever waits, waits no longer: send now (a backoff is shortened to the closing cap).
        if (timer) {
          clearTimeout(timer.handle);
          timer = null;
        }
        void pump();
      }
      if (pendingTotal > 0) {
        let deadline: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise<void>((resolve) => drainedWaiters.push(resolve)),
          new Promise<void>((resolve) => {
            deadline = setTimeout(resolve, Math.max(0, deadlineMs));
          }),
        ]);
        clearTimeout(deadline);
      }
      stopped = true;
      if (timer) {
        clearTimeout(timer.handle);
        timer = null;
      }
      if (pendingTotal > 0) {
        logger.error({ lost: pendingTotal }, 'usage events not recorded before the shutdown deadline: lost');
      }
    },
  };
}

/** The key service refused the batch as malformed: retrying the same events cannot succeed. */
export function isRejectedBatch(err: unknown): boolean {
  if (err instanceof Error && err.name === 'UsageRejectedError') return true;
  return err instanceof UpstreamError && err.upstream === 'key-service' && /\bstatus 400\b/.test(err.detail);
}

function countByOrganization(events: readonly UsageEvent[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const event of events) counts[event.organizationId] = (counts[event.organizationId] ?? 0) + 1;
  return counts;
}
