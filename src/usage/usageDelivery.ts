import type { Logger } from 'pino';
import { UpstreamError } from '../errors.js';
import { inSpan } from '../telemetry/spans.js';
import { retryDelayMs } from '../upstream/backoff.js';
import {
  countByOrganization,
  isRejectedBatch,
  MAX_USAGE_BATCH,
  type UsageEvent,
  type UsageSink,
} from './usageEvent.js';
import type { UsageLedger } from './usageLedger.js';
import { DEFAULT_MAX_PENDING } from './usageRecorder.js';
import type { UsageSpool } from './usageSpool.js';

/**
 * What both usage buffers (in memory, and through Redis) do the same way when they deliver:
 * their settings, when the next look happens, what the ceiling ledger is told, and one call
 * to the key service.
 */

/** The settings both buffers take. */
export interface DeliveryOptions {
  readonly sink: UsageSink;
  readonly logger: Logger;
  /** Events per call to the key service: 1 to 1000 (its limit), default 1000. */
  readonly batchSize?: number;
  /** How long recorded calls may wait for companions before delivery looks for them. Default 1000 ms. */
  readonly flushIntervalMs?: number;
  readonly now?: () => Date;
  /** Backoff after a failed call: first delay and cap. Defaults 250 ms and 30 s. */
  readonly retryBaseMs?: number;
  readonly retryMaxMs?: number;
  readonly random?: () => number;
  /**
   * Whether a failure means the service refused the batch itself (400 invalid_request),
   * so sending it again cannot help. Default isRejectedBatch.
   */
  readonly isRejection?: (err: unknown) => boolean;
  /**
   * Events waiting for the key service at most (default DEFAULT_MAX_PENDING); beyond,
   * requests are refused with 503 until the key service takes some (see ensureRoom).
   */
  readonly maxPending?: number;
  /** Metrics hooks: a batch of this many events was acknowledged / failed to send (and will be retried). */
  readonly onFlushed?: (events: number) => void;
  readonly onFlushFailed?: (events: number) => void;
  /** Told what is sent, acknowledged and dropped, for the ceiling check, by whichever instance delivers. */
  readonly ledger?: UsageLedger;
  /** Where what is undelivered at the shutdown deadline goes, and where earlier instances' is taken from. */
  readonly spool?: UsageSpool;
}

/** While closing, retries come quickly: the deadline, not the backoff, bounds the wait. */
const CLOSING_RETRY_MAX_MS = 500;
/** Kept back from the shutdown deadline to write to the spool what is left. */
export const SPOOL_WRITE_MS = 1_000;

/** The options with their defaults, and the wait before a failed batch is sent again. */
export function deliverySettings(options: DeliveryOptions) {
  const retryBaseMs = options.retryBaseMs ?? 250;
  const retryMaxMs = options.retryMaxMs ?? 30_000;
  const random = options.random ?? Math.random;
  return {
    batchSize: Math.min(MAX_USAGE_BATCH, Math.max(1, options.batchSize ?? MAX_USAGE_BATCH)),
    flushIntervalMs: options.flushIntervalMs ?? 1000,
    now: options.now ?? (() => new Date()),
    isRejection: options.isRejection ?? isRejectedBatch,
    maxPending: options.maxPending ?? DEFAULT_MAX_PENDING,
    retryDelayMs: (failures: number, closing: boolean, err: unknown): number =>
      retryDelayMs(failures, {
        baseMs: retryBaseMs,
        maxMs: closing ? Math.min(retryMaxMs, CLOSING_RETRY_MAX_MS) : retryMaxMs,
        random,
        retryAfterSeconds: err instanceof UpstreamError ? err.retryAfterSeconds : undefined,
      }),
  };
}

/**
 * The one pending look of a buffer: at most one timer at a time. A look asked "soon" replaces
 * a waiting interval but never a backoff (a failing key service is not asked again early).
 */
export interface DeliveryTimer {
  /** Arms the timer unless one is armed or `canArm()` says no; `backoff` marks a wait after a failure. */
  schedule(delayMs: number, backoff: boolean): void;
  /** Looks at once, unless a backoff is running. */
  soon(): void;
  /** Forgets any armed timer, backoff included. */
  clear(): void;
}

export function createDeliveryTimer(options: {
  readonly look: () => void;
  /** False while a look is running or the buffer is stopped. */
  readonly canArm: () => boolean;
  /** Whether the timer keeps the process alive: only while closing, or a buffer would hold a process up by itself. */
  readonly keepsAlive: () => boolean;
}): DeliveryTimer {
  let armed: { handle: NodeJS.Timeout; backoff: boolean } | null = null;
  const timer: DeliveryTimer = {
    schedule(delayMs, backoff) {
      if (armed || !options.canArm()) return;
      const handle = setTimeout(() => {
        armed = null;
        options.look();
      }, delayMs);
      if (!options.keepsAlive()) handle.unref();
      armed = { handle, backoff };
    },
    soon() {
      if (armed && !armed.backoff) timer.clear();
      timer.schedule(0, false);
    },
    clear() {
      if (armed) clearTimeout(armed.handle);
      armed = null;
    },
  };
  return timer;
}

/** Tells the ceiling ledger, per organization, what became of these events. */
export function tellLedger(
  ledger: UsageLedger | undefined,
  events: readonly UsageEvent[],
  step: 'sending' | 'acknowledged' | 'dropped',
): void {
  if (!ledger) return;
  for (const [organizationId, calls] of Object.entries(countByOrganization(events)))
    ledger[step](organizationId, calls);
}

/** One call to the key service, traced; a receipt that does not add up is said, not fatal (ids make resends safe). */
export async function sendBatch(sink: UsageSink, events: readonly UsageEvent[], logger: Logger): Promise<void> {
  const receipt = await inSpan('usage.flush', () => sink.recordUsage(events), {
    root: true,
    attributes: { 'usage.events': events.length },
  });
  if (receipt.accepted + receipt.duplicates !== events.length) {
    logger.warn(
      { sent: events.length, accepted: receipt.accepted, duplicates: receipt.duplicates },
      'usage receipt does not add up to the batch sent',
    );
  }
}

/**
 * The events an earlier instance spooled, taken by this one: the ceiling ledger counts them
 * here (admitted elsewhere, perhaps not in `used` yet), and the spool's files go once every
 * one of them is safe (`safe` is told of every event that becomes so, spooled or not).
 */
export interface SpoolAdoption {
  /** Takes what the spool holds (nothing without a spool): the events to deliver. */
  take(): Promise<readonly UsageEvent[]>;
  safe(events: readonly UsageEvent[]): void;
}

export function adoptSpool(
  spool: UsageSpool | undefined,
  ledger: UsageLedger | undefined,
  logger: Logger,
): SpoolAdoption {
  const waiting = new Set<string>();
  let delivered: (() => Promise<void>) | null = null;
  return {
    async take() {
      if (!spool) return [];
      const spooled = await spool.claim();
      if (spooled.events.length === 0) {
        await spooled.delivered();
        return [];
      }
      delivered = spooled.delivered;
      for (const event of spooled.events) waiting.add(event.id);
      for (const [organizationId, calls] of Object.entries(countByOrganization(spooled.events)))
        ledger?.adopted(organizationId, calls);
      return spooled.events;
    },
    safe(events) {
      if (waiting.size === 0) return;
      for (const event of events) waiting.delete(event.id);
      if (waiting.size > 0 || !delivered) return;
      const done = delivered;
      delivered = null;
      done().catch((err: unknown) => logger.warn({ err }, 'spool files of delivered events could not be deleted'));
    },
  };
}

/**
 * What is left at a buffer's shutdown deadline goes to the spool; only when that fails too,
 * or there is no spool, is it lost: said on one line with the count, and thrown, so the
 * process exits non-zero. `missed` says what did not happen in time, for those lines.
 */
export async function spoolOrLose(
  left: readonly UsageEvent[],
  spool: UsageSpool | undefined,
  logger: Logger,
  missed: string,
): Promise<void> {
  if (spool) {
    try {
      await spool.write(left);
      logger.warn(
        { spooled: left.length },
        `usage events not ${missed} before the shutdown deadline: spooled for the next instance`,
      );
      return;
    } catch (err: unknown) {
      logger.error({ lost: left.length, err }, `usage events not ${missed} and the spool cannot be written: lost`);
      throw new Error('usage events lost');
    }
  }
  logger.error({ lost: left.length }, `usage events not ${missed} before the shutdown deadline: lost`);
  throw new Error('usage events lost');
}
