import type { Logger } from 'pino';
import { REDIS_COMMAND_TIMEOUT_MS } from '../redis/connectRedis.js';
import { sleep, withDeadline } from '../upstream/deadline.js';
import { createMemoryQueue, eventsOf, type QueueHooks, type Round, type UsageQueue } from './usageQueue.js';
import type { UsageStream } from './usageStream.js';
import type { StoredRound } from './usageStreamEntry.js';

export interface RedisQueueOptions {
  readonly stream: UsageStream;
  readonly logger: Logger;
  /** How long a recorded call may wait before its copy is written to Redis. Default 25 ms: a SIGKILL loses what waits. */
  readonly persistIntervalMs?: number;
  /** An instance whose lease is this old is gone: what it kept is taken over. Default 5000 ms. */
  readonly claimIdleMs?: number;
}

/** Events per append at most: a backlog (Redis was away) goes in pieces. */
const MAX_APPEND = 1000;
const TAKE_AT_ONCE = 100;
/** Between writes to a Redis that refused. */
const REDIS_RETRY_MS = 250;

/** The queue of an instance sharing a Redis (README.md): the rounds in memory, and a copy of each in the stream. */
export function redisUsageQueue(options: RedisQueueOptions): (hooks: QueueHooks) => UsageQueue {
  return (hooks) => createRedisUsageQueue(options, hooks);
}

function createRedisUsageQueue(options: RedisQueueOptions, hooks: QueueHooks): UsageQueue {
  const { stream, logger } = options;
  const persistIntervalMs = options.persistIntervalMs ?? 25;
  const claimIdleMs = options.claimIdleMs ?? 5000;
  const keepEveryMs = Math.max(1, Math.floor(claimIdleMs / 3));
  // A lease is judged only by a watch with no gap over half the lease (usageStream.ts): looks come twice as often.
  const watchEveryMs = Math.max(1, Math.floor(claimIdleMs / 4));
  /** Rounds with no copy in Redis, oldest first (finished ones are skipped). */
  const unwritten: Round[] = [];
  const memory = createMemoryQueue(hooks.perRound, (round) => unwritten.push(round));
  /** Finished rounds whose entries are still in Redis. */
  const removable: Round[] = [];
  /**
   * Rounds whose append went out and got no answer: Redis may hold them. They are written again even once
   * delivered (found by their round key, never added twice), so their entries are removed, not left for a takeover.
   */
  const unanswered = new WeakSet<Round>();
  /** Entries pending for this instance in Redis, as far as it knows: exact, as one Redis call runs at a time. */
  let ownEntries = 0;
  let refused = false;
  const last = { write: 0, keep: 0, takeOver: Number.NEGATIVE_INFINITY };
  let running: Promise<void> | null = null;

  const failed = (err: unknown, what: string): void => {
    if (!refused) logger.warn({ err, waiting: memory.size() }, `usage: redis refused to ${what}; retrying`);
    refused = true;
  };

  const takeIn = (entries: readonly StoredRound[]): void => {
    for (const { entryId, events } of entries) memory.append({ entryId, events, finished: false, adopted: true });
    ownEntries += entries.length;
    if (entries.length === 0) return;
    hooks.adopted?.(entries.flatMap((entry) => entry.events));
    logger.info({ entries: entries.length }, 'usage events another instance left in redis: delivering');
    hooks.wake();
  };

  const write = async (): Promise<void> => {
    memory.closeCalls();
    const rounds: Round[] = [];
    for (let events = 0; unwritten.length > 0 && events < MAX_APPEND; ) {
      const round = unwritten.shift() as Round;
      if (round.finished && !unanswered.has(round)) continue;
      rounds.push(round);
      events += round.events.length;
    }
    if (rounds.length === 0) return;
    const written = await stream.append(rounds.map((round) => round.events)).catch((err: unknown) => {
      for (const round of rounds) unanswered.add(round);
      unwritten.unshift(...rounds);
      failed(err, 'store usage events');
    });
    if (!written) return;
    if (refused) logger.info('usage: redis takes events again');
    refused = false;
    rounds.forEach((round, i) => {
      unanswered.delete(round);
      round.entryId = written.entryIds[i] as string;
      if (round.finished) removable.push(round);
    });
    ownEntries += rounds.length;
    hooks.stored(eventsOf(rounds));
    takeIn(written.unread);
  };

  const remove = async (): Promise<void> => {
    const rounds = removable.splice(0);
    try {
      await stream.remove(rounds.map((round) => round.entryId as string));
      ownEntries -= rounds.length;
    } catch (err: unknown) {
      removable.unshift(...rounds);
      logger.debug({ err }, 'usage: delivered entries not yet removed from redis');
    }
  };

  /** Renews the lease; if Redis lost entries this instance wrote, all it keeps is written again. */
  const keep = async (): Promise<void> => {
    const inRedis = await stream.keepAlive();
    if (inRedis >= ownEntries) return;
    logger.warn(
      { lostEntries: ownEntries - inRedis },
      'usage: redis lost events this instance keeps: writing them again',
    );
    if (inRedis > 0) await stream.removeOwn();
    ownEntries = 0;
    removable.length = 0;
    unwritten.length = 0;
    for (const round of memory.rounds) {
      round.entryId = null;
      unwritten.push(round);
    }
  };

  const due = (work: keyof typeof last, everyMs: number, at: number): boolean => {
    if (at - last[work] < everyMs) return false;
    last[work] = at;
    return true;
  };
  const tick = (): Promise<void> => {
    running ??= (async () => {
      const at = Date.now();
      try {
        if (due('write', refused ? REDIS_RETRY_MS : persistIntervalMs, at)) await write();
        if (removable.length > 0) await remove();
        if (due('keep', keepEveryMs, at)) await keep();
        for (let full = due('takeOver', watchEveryMs, at); full; ) {
          const entries = await stream.takeOver(claimIdleMs, TAKE_AT_ONCE);
          takeIn(entries);
          full = entries.length >= TAKE_AT_ONCE;
        }
      } catch (err: unknown) {
        failed(err, 'keep usage events');
      }
    })().finally(() => {
      running = null;
    });
    return running;
  };
  const timer = setInterval(() => void tick(), Math.min(persistIntervalMs, Math.max(1, Math.floor(keepEveryMs / 4))));
  timer.unref();
  void tick();

  const hasUnwritten = (): boolean => unwritten.some((round) => !round.finished || unanswered.has(round));
  return {
    ...memory,
    finish(batch) {
      memory.finish(batch);
      for (const round of batch) if (round.entryId !== null) removable.push(round);
    },
    async acknowledgedOnce(events) {
      // Redis unreachable: told as before, each copy (the fault is logged where Redis refused).
      return stream.firstAcknowledged(events).catch(() => events);
    },
    closeMs: 3 * REDIS_COMMAND_TIMEOUT_MS,
    async close(deadline) {
      clearInterval(timer);
      memory.closeCalls();
      // A slow Redis gets until the deadline and no longer: the time after it is the spool's. What a write
      // still out at the deadline stores is also spooled, under the same ids (sent twice, counted once).
      const store = async (): Promise<void> => {
        await running;
        while (hasUnwritten() && Date.now() < deadline) {
          await write();
          if (hasUnwritten()) await sleep(Math.max(0, Math.min(REDIS_RETRY_MS, deadline - Date.now())));
        }
        if (removable.length > 0) await remove();
        await stream.letGo();
      };
      await withDeadline(Math.max(0, deadline - Date.now()), store, 'usage: redis at shutdown').catch((err: unknown) =>
        logger.warn({ err }, 'usage: redis did not finish at shutdown (the lease lapses by itself)'),
      );
      const leftInRedis = eventsOf(memory.rounds.filter((round) => round.entryId !== null)).length;
      if (leftInRedis > 0) {
        logger.warn(
          { leftInRedis },
          'usage events not delivered before the shutdown deadline: left in redis for another instance',
        );
      }
      return eventsOf(memory.rounds.filter((round) => round.entryId === null));
    },
  };
}
