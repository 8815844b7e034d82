import type { Principal } from '../auth/principal.js';
import { UpstreamError } from '../errors.js';
import { REDIS_COMMAND_TIMEOUT_MS } from '../redis/connectRedis.js';
import { sleep, withDeadline } from '../upstream/deadline.js';
import type { UsageBuffer } from './createUsageBuffer.js';
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
import type { UsageStream } from './usageStream.js';
import type { StoredRound } from './usageStreamEntry.js';

export interface RedisUsageBufferOptions extends DeliveryOptions {
  readonly stream: UsageStream;
  /** How long a recorded call may wait in memory before it is written to Redis. Default 25 ms: a SIGKILL loses what waits. */
  readonly persistIntervalMs?: number;
  /** Entries a consumer held this long without renewing them are taken over. Default 5000 ms. */
  readonly claimIdleMs?: number;
}

/** Appends per round: a backlog (Redis was away) goes in pieces. */
const MAX_APPEND = 1000;
/**
 * Entries read at once: at one entry per 25 ms round, a few seconds of one instance's
 * rounds; a full read is followed by another at once.
 */
const ENTRIES_PER_READ = 100;
/** Between tries to write to a Redis that refused, and between reads of one that failed. */
const REDIS_RETRY_MS = 250;
/** How often entries held by a consumer that stopped renewing them are looked for. */
const CLAIM_EVERY_MS = 2000;
/** How often the group is swept of consumers gone for CONSUMER_GONE_MS (each start adds one). */
const CONSUMER_SWEEP_MS = 10 * 60_000;
const CONSUMER_GONE_MS = 60 * 60_000;

/**
 * Counts successful calls, durably, through Redis. record() only pushes the call to an
 * array; at most `persistIntervalMs` later the calls become events with their UUIDs and
 * are appended to the shared stream (one write for the lot), so a process killed outright
 * loses only that interval. Delivery reads the stream, this instance's calls and every
 * other's alike, in batches of up to `batchSize`: posts them, then removes them. A batch
 * the key service did not take is retried with the same ids (counted once) while this
 * instance renews its hold on it; entries held by an instance that stopped renewing
 * (killed) are taken over after `claimIdleMs` by whichever instance looks next.
 *
 * On close: what is still in memory is written to Redis, then the stream is delivered
 * until the deadline; what is left stays in Redis for another instance. Only what Redis
 * cannot take goes to the spool file, and only what neither takes is lost (the close rejects).
 */
export function createRedisUsageBuffer(options: RedisUsageBufferOptions): UsageBuffer {
  const { sink, stream, logger } = options;
  const settings = deliverySettings(options);
  const { batchSize, flushIntervalMs, now, isRejection, maxPending } = settings;
  const persistIntervalMs = options.persistIntervalMs ?? 25;
  const claimIdleMs = options.claimIdleMs ?? 5000;
  const keepEveryMs = Math.max(1, Math.floor(claimIdleMs / 3));

  /** Recorded (or taken from a spool), not yet in Redis. */
  const unpersisted: Array<RecordedCall | UsageEvent> = [];
  /** The stream's events as last seen: every instance's events waiting there. */
  let storedLength = 0;
  let persisting: Promise<void> | null = null;
  /** Calls of the round on its way to Redis: out of the array, not yet in storedLength. */
  let appending = 0;
  let persistTimer: NodeJS.Timeout | null = null;
  let redisRefused = false;

  /** Entries this instance read and is delivering (or will retry), and their events. */
  let held: StoredRound[] | null = null;
  let heldEvents = 0;
  /** The entries at the front of `held` in the call to the key service being made (or retried). */
  let batch: StoredRound[] | null = null;
  /** Whether the last read filled up: more may wait. */
  let readFull = false;
  let keepTimer: NodeJS.Timeout | null = null;
  let delivering = false;
  let failures = 0;
  let lastClaimAt = Number.NEGATIVE_INFINITY;
  let lastSweepAt = Date.now();
  /** A call of an organization near its ceiling is waiting: write and deliver without delay. */
  let hurry = false;

  let closing = false;
  let stopped = false;
  /** While closing: events still to deliver before the closer may stop (the stream's count when it began). */
  let closingBudget = 0;
  const idleWaiters: Array<() => void> = [];

  /** Spooled events are safe once in Redis: their files go once all of them are. */
  const spooled = adoptSpool(options.spool, options.ledger, logger);

  const redisFailed = (err: unknown, what: string): void => {
    if (redisRefused) return;
    redisRefused = true;
    logger.warn({ err, waiting: unpersisted.length }, `usage: redis refused to ${what}; retrying`);
  };
  const redisAnswered = (): void => {
    if (!redisRefused) return;
    redisRefused = false;
    logger.info({ waiting: unpersisted.length }, 'usage: redis takes events again');
  };

  // ---- into Redis -------------------------------------------------------------------------

  const schedulePersist = (delayMs: number): void => {
    if (persistTimer || stopped) return;
    persistTimer = setTimeout(() => {
      persistTimer = null;
      void persist();
    }, delayMs);
    if (!closing) persistTimer.unref();
  };

  /** One round: up to MAX_APPEND waiting calls appended; the ones Redis refused wait for the next round. */
  const persist = (): Promise<void> => {
    if (persisting) return persisting;
    if (unpersisted.length === 0) return Promise.resolve();
    const round = (async () => {
      const events = unpersisted.splice(0, MAX_APPEND).map(toUsageEvent);
      appending = events.length;
      let stored = false;
      try {
        storedLength = await stream.append(events, batchSize);
        stored = true;
      } catch (err: unknown) {
        redisFailed(err, 'store usage events');
      } finally {
        appending = 0;
      }
      if (!stored) {
        // Back at the front with their ids: should Redis have taken them after all, the resend is counted once.
        unpersisted.unshift(...events);
        return;
      }
      redisAnswered();
      spooled.safe(events);
      if (hurry || storedLength >= batchSize) deliverTimer.soon();
    })();
    persisting = round.finally(() => {
      persisting = null;
      // While closing, the closer drives the rounds itself.
      if (unpersisted.length > 0 && !closing)
        schedulePersist(redisRefused ? REDIS_RETRY_MS : hurry ? 0 : persistIntervalMs);
    });
    return persisting;
  };

  // ---- out to the key service -------------------------------------------------------------

  const deliverTimer = createDeliveryTimer({
    look: () => void deliver(),
    canArm: () => !stopped && !delivering,
    keepsAlive: () => closing,
  });

  const hold = (entries: StoredRound[]): void => {
    held = entries;
    heldEvents = eventCount(entries);
    keepTimer = setInterval(() => {
      stream
        .keep((held ?? []).map((entry) => entry.entryId))
        .catch((err: unknown) => logger.debug({ err }, 'usage: could not renew held entries'));
    }, keepEveryMs);
    keepTimer.unref();
  };

  const release = (): StoredRound[] => {
    const entries = held ?? [];
    held = null;
    heldEvents = 0;
    batch = null;
    if (keepTimer) clearInterval(keepTimer);
    keepTimer = null;
    return entries;
  };

  /** Entries to deliver next: some a dead instance held, when it is time to look, else new ones. */
  const nextEntries = async (): Promise<StoredRound[]> => {
    const at = Date.now();
    if (at - lastSweepAt >= CONSUMER_SWEEP_MS) {
      lastSweepAt = at;
      stream
        .forgetGoneConsumers(CONSUMER_GONE_MS)
        .catch((err: unknown) => logger.debug({ err }, 'usage: consumers of stopped instances not swept'));
    }
    if (at - lastClaimAt >= CLAIM_EVERY_MS) {
      lastClaimAt = at;
      const claimed = await stream.claimIdle(claimIdleMs, ENTRIES_PER_READ);
      if (claimed.length > 0) {
        logger.info({ events: eventCount(claimed) }, 'usage events another instance held unsent: delivering');
        return claimed;
      }
    }
    return stream.readNew(ENTRIES_PER_READ);
  };

  /** The entries at the front of `held` that one call takes: whole entries up to batchSize events, at least one. */
  const nextBatch = (entries: readonly StoredRound[]): StoredRound[] => {
    const taken: StoredRound[] = [];
    let events = 0;
    for (const entry of entries) {
      if (taken.length > 0 && events + entry.events.length > batchSize) break;
      taken.push(entry);
      events += entry.events.length;
    }
    return taken;
  };

  /** Out of the stream once taken (or refused for good); a removal that fails means a harmless resend. */
  const settleBatch = async (step: 'acknowledged' | 'dropped'): Promise<void> => {
    const entries = batch ?? [];
    batch = null;
    const events = entries.flatMap((entry) => entry.events);
    const rest = (held ?? []).slice(entries.length);
    if (rest.length === 0) release();
    else {
      held = rest;
      heldEvents -= events.length;
    }
    tellLedger(options.ledger, events, step);
    if (step === 'acknowledged') options.onFlushed?.(events.length);
    try {
      storedLength = await stream.remove(entries.map((entry) => entry.entryId));
    } catch (err: unknown) {
      logger.warn({ err, events: events.length }, 'delivered usage events not removed from redis: may be sent again');
    }
  };

  /** One call to the key service per batchSize events: an entry another instance wrote larger goes in pieces. */
  const send = async (events: readonly UsageEvent[]): Promise<void> => {
    for (let start = 0; start < events.length; start += batchSize) {
      await sendBatch(sink, events.slice(start, start + batchSize), logger);
    }
  };

  /** Delivers batches one call at a time; returns the delay before the next look, or null for the usual interval. */
  const deliverRounds = async (): Promise<{ delayMs: number; backoff: boolean } | null> => {
    while (!stopped) {
      if (held === null) {
        if (closing && closingBudget <= 0) return null;
        let entries: StoredRound[];
        try {
          entries = await nextEntries();
        } catch (err: unknown) {
          redisFailed(err, 'hand out usage events');
          return { delayMs: REDIS_RETRY_MS, backoff: true };
        }
        if (entries.length === 0) {
          // Nothing unread and nothing abandoned: what the stream still holds, others are delivering.
          if (closing) closingBudget = 0;
          return null;
        }
        readFull = entries.length >= ENTRIES_PER_READ;
        hold(entries);
        hurry = false;
      }
      if (batch === null) {
        batch = nextBatch(held ?? []);
        tellLedger(
          options.ledger,
          batch.flatMap((entry) => entry.events),
          'sending',
        );
      }
      const events = batch.flatMap((entry) => entry.events);
      try {
        await send(events);
      } catch (err: unknown) {
        if (isRejection(err)) {
          logger.error(
            { err, dropped: events.length, organizations: countByOrganization(events) },
            'usage batch refused by the key service as malformed: dropped, these calls are not counted',
          );
          await settleBatch('dropped');
          continue;
        }
        failures += 1;
        options.onFlushFailed?.(events.length);
        const delayMs = settings.retryDelayMs(failures, closing, err);
        logger.warn(
          { err, attempt: failures, retryInMs: delayMs, events: events.length },
          'usage batch not recorded: retrying',
        );
        return { delayMs, backoff: true };
      }
      failures = 0;
      await settleBatch('acknowledged');
      if (closing) closingBudget -= events.length;
      else if (held === null && !hurry && !readFull) return null;
    }
    return null;
  };

  const deliver = async (): Promise<void> => {
    if (delivering || stopped) return;
    delivering = true;
    let next: { delayMs: number; backoff: boolean } | null = null;
    try {
      next = await deliverRounds();
    } catch (err: unknown) {
      // Nothing here may end the process (an unhandled rejection would): look again shortly.
      logger.error({ err }, 'usage delivery failed unexpectedly: retrying');
      next = { delayMs: REDIS_RETRY_MS, backoff: true };
    } finally {
      delivering = false;
    }
    if (next === null && held === null) for (const wake of idleWaiters.splice(0)) wake();
    if (next) deliverTimer.schedule(next.delayMs, next.backoff);
    else if (!closing) deliverTimer.schedule(flushIntervalMs, false);
  };

  /** Resolves once the closing delivery has nothing more to do (or never, if it keeps failing: the deadline ends it). */
  const deliveredWhileClosing = (): Promise<void> => {
    const idle = new Promise<void>((resolve) => idleWaiters.push(resolve));
    // A backoff set before the shutdown may be long: the closing cap applies from now.
    deliverTimer.clear();
    deliverTimer.soon();
    return idle;
  };

  // Something may wait in the stream already (another instance's): look at once.
  deliverTimer.schedule(0, false);

  /** Recorded calls Redis did not take by the deadline go to the spool; only when that fails too are they lost. */
  const keepUnpersisted = async (): Promise<void> => {
    const left = unpersisted.splice(0).map(toUsageEvent);
    if (left.length > 0) await spoolOrLose(left, options.spool, logger, 'stored in redis');
  };

  return {
    ensureRoom(): void {
      // As without Redis: while the backlog is full, fail closed rather than serve uncounted.
      const waiting = unpersisted.length + appending + storedLength;
      if (waiting >= maxPending) {
        throw new UpstreamError('key-service', 'throttled', `usage: ${waiting} events waiting for the key service`);
      }
    },

    record(principal: Principal, route: string): void {
      if (stopped) {
        logger.error({ organizationId: principal.organizationId, route }, 'usage recorded after shutdown: not counted');
        return;
      }
      unpersisted.push({ principal, route, atMs: now().getTime() });
      // Near the ceiling other instances must see this call soon: no waiting for companions.
      if (options.ledger?.isNearCeiling(principal.organizationId)) {
        hurry = true;
        if (persistTimer) clearTimeout(persistTimer);
        persistTimer = null;
        if (!persisting) schedulePersist(0);
      } else if (!persisting) schedulePersist(persistIntervalMs);
    },

    pendingTotal(): number {
      return unpersisted.length + appending + heldEvents;
    },

    async deliverSpooled(): Promise<number> {
      if (stopped) return 0;
      const events = await spooled.take();
      if (events.length === 0) return 0;
      unpersisted.push(...events);
      logger.info({ events: events.length }, 'usage events from the spool: storing in redis');
      schedulePersist(0);
      return events.length;
    },

    async close(deadlineMs: number): Promise<void> {
      const startedAt = Date.now();
      // Kept back from the deadline: the spool write, and the one Redis call that lets held entries go.
      const keepBack = (options.spool ? SPOOL_WRITE_MS : 0) + REDIS_COMMAND_TIMEOUT_MS;
      const leftMs = () => Math.max(0, startedAt + deadlineMs - keepBack - Date.now());
      closing = true;
      if (persistTimer) clearTimeout(persistTimer);
      persistTimer = null;
      // First, everything recorded into Redis: from there any instance delivers it.
      while (unpersisted.length > 0 && leftMs() > 0) {
        await persist();
        if (unpersisted.length > 0) await sleep(Math.min(REDIS_RETRY_MS, leftMs()));
      }
      // Then deliver what the stream holds now, while time is left; others' later events are theirs.
      if (unpersisted.length === 0) {
        closingBudget = await stream.length().catch(() => storedLength);
        if (leftMs() > 0 && (closingBudget > 0 || held !== null)) {
          await withDeadline(leftMs(), deliveredWhileClosing, 'usage delivery').catch(() => undefined);
        }
      }
      // A round still on its way holds calls out of the array: they are kept or handed back before going on.
      if (persisting) await persisting;
      stopped = true;
      if (persistTimer) clearTimeout(persistTimer);
      deliverTimer.clear();
      persistTimer = null;
      const stillHeld = release();
      const stillHeldEvents = eventCount(stillHeld);
      // Another instance takes them at its next look instead of waiting for them to look abandoned.
      await stream
        .letGo(
          stillHeld.map((entry) => entry.entryId),
          claimIdleMs,
        )
        .catch((err: unknown) => logger.debug({ err }, 'usage: held entries not let go (taken over later)'));
      const leftInRedis = Math.max(stillHeldEvents, closingBudget);
      if (leftInRedis > 0 && unpersisted.length === 0) {
        logger.warn(
          { leftInRedis },
          'usage events not delivered before the shutdown deadline: left in redis for another instance',
        );
      }
      await keepUnpersisted();
    },
  };
}

function eventCount(entries: readonly StoredRound[]): number {
  let events = 0;
  for (const entry of entries) events += entry.events.length;
  return events;
}
