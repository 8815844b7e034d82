import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Result } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisConnection } from '../redis/connectRedis.js';
import type { UsageEvent } from './usageEvent.js';
import {
  APPEND_SCRIPT,
  autoClaimReply,
  entryValues,
  goneConsumers,
  REMOVE_SCRIPT,
  readGroupEntries,
  type StoredRound,
  type StreamRead,
} from './usageStreamEntry.js';

/**
 * Usage events kept in one Redis stream until the key service took them, so that any
 * instance delivers any instance's events. An entry holds one round of events (what an
 * instance wrote at once, at most one POST's worth), and a counter beside the stream holds
 * the number of events in it, kept by the scripts that append and remove. Every instance
 * appends and reads through one consumer group, as a consumer of its own: an entry read is
 * pending on its reader until removed; entries a reader holds without renewing them (it
 * died) are taken over by another. Keys with one hash tag, so a cluster keeps them on one node.
 *
 * Only non-blocking commands: the connection is the one the request path shares.
 */
export interface UsageStream {
  /** This instance's consumer name in the group. */
  readonly consumer: string;
  /**
   * Appends the events in one call, as entries of at most `perEntry` events; resolves with
   * the events in the stream after them. When it rejects they may have been written after
   * all (a late answer): appended again, their ids are counted once.
   */
  append(events: readonly UsageEvent[], perEntry: number): Promise<number>;
  /** Up to `count` entries no consumer has read yet, now held by this one. */
  readNew(count: number): Promise<StoredRound[]>;
  /** Up to `count` entries held by any consumer without renewal for `minIdleMs`, now held by this one. */
  claimIdle(minIdleMs: number, count: number): Promise<StoredRound[]>;
  /** Renews this consumer's hold on entries it is still delivering. */
  keep(entryIds: readonly string[]): Promise<void>;
  /** Gives up entries this consumer holds: they look abandoned for `idleMs`, so the next to look takes them over. */
  letGo(entryIds: readonly string[], idleMs: number): Promise<void>;
  /** Delivered: out of the group and out of the stream; resolves with the events left in the stream. */
  remove(entryIds: readonly string[]): Promise<number>;
  /** Events in the stream (every instance's). */
  length(): Promise<number>;
  /** Drops from the group the consumers that hold nothing and have not read for `minIdleMs`; resolves with their number. */
  forgetGoneConsumers(minIdleMs: number): Promise<number>;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    appendUsageEvents(key: string, waitingKey: string, ...values: string[]): Result<number, Context>;
    removeUsageEntries(key: string, waitingKey: string, group: string, ...entryIds: string[]): Result<number, Context>;
  }
}

export const USAGE_STREAM_KEY = 'gateway:{usage}:events';
export const USAGE_STREAM_GROUP = 'gateway-usage';

/** The key of the count of events a stream holds: beside it, in its hash slot. */
export function usageWaitingKey(streamKey: string): string {
  return `${streamKey}:waiting`;
}

export interface UsageStreamOptions {
  readonly redis: RedisConnection;
  readonly logger: Logger;
  /** Default USAGE_STREAM_KEY; tests use their own. */
  readonly key?: string;
  /** Default: host name, pid and a random part, unique per process. */
  readonly consumer?: string;
}

export function createUsageStream(options: UsageStreamOptions): UsageStream {
  const { redis, logger } = options;
  const key = options.key ?? USAGE_STREAM_KEY;
  const waitingKey = usageWaitingKey(key);
  const group = USAGE_STREAM_GROUP;
  const consumer = options.consumer ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  let claimCursor = '0-0';
  // Scripts: an entry and the count of its events change together.
  redis.defineCommand('appendUsageEvents', { numberOfKeys: 2, lua: APPEND_SCRIPT });
  redis.defineCommand('removeUsageEntries', { numberOfKeys: 2, lua: REMOVE_SCRIPT });

  /** The group reads from the stream's first entry: what was appended before it existed is delivered too. */
  const createGroup = async (): Promise<void> => {
    try {
      await redis.call('XGROUP', 'CREATE', key, group, '0', 'MKSTREAM');
    } catch (err: unknown) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err;
    }
  };

  /** Runs a group command; a stream or group that is gone (a Redis restarted empty) is created again. */
  const inGroup = async (command: () => Promise<unknown>): Promise<unknown> => {
    try {
      return await command();
    } catch (err: unknown) {
      if (!(err instanceof Error && err.message.startsWith('NOGROUP'))) throw err;
      await createGroup();
      return command();
    }
  };

  /** Entries that hold no event can never be delivered: removed, and said so. */
  const taken = async (read: StreamRead): Promise<StoredRound[]> => {
    if (read.malformed.length > 0) {
      logger.error({ entries: read.malformed.length }, 'usage stream entries that hold no event: removed');
      await remove(read.malformed);
    }
    return read.rounds;
  };

  const length = async (): Promise<number> => Number((await redis.get(waitingKey)) ?? 0);

  const remove = async (entryIds: readonly string[]): Promise<number> => {
    if (entryIds.length === 0) return length();
    return redis.removeUsageEntries(key, waitingKey, group, ...entryIds);
  };

  return {
    consumer,

    async append(events, perEntry) {
      return redis.appendUsageEvents(key, waitingKey, ...entryValues(events, perEntry));
    },

    async readNew(count) {
      const reply = await inGroup(() =>
        redis.call('XREADGROUP', 'GROUP', group, consumer, 'COUNT', count, 'STREAMS', key, '>'),
      );
      return taken(readGroupEntries(reply));
    },

    async claimIdle(minIdleMs, count) {
      const reply = await inGroup(() =>
        redis.call('XAUTOCLAIM', key, group, consumer, minIdleMs, claimCursor, 'COUNT', count),
      );
      const { cursor, read } = autoClaimReply(reply);
      claimCursor = cursor;
      return taken(read);
    },

    async keep(entryIds) {
      if (entryIds.length === 0) return;
      await redis.call('XCLAIM', key, group, consumer, 0, ...entryIds, 'JUSTID');
    },

    async letGo(entryIds, idleMs) {
      if (entryIds.length === 0) return;
      await redis.call('XCLAIM', key, group, consumer, 0, ...entryIds, 'IDLE', idleMs, 'JUSTID');
    },

    remove,

    length,

    async forgetGoneConsumers(minIdleMs) {
      const gone = goneConsumers(await redis.call('XINFO', 'CONSUMERS', key, group), minIdleMs, consumer);
      // Only consumers with nothing pending: deleting one that held entries would strand them.
      await Promise.all(gone.map((name) => redis.call('XGROUP', 'DELCONSUMER', key, group, name)));
      return gone.length;
    },
  };
}
