import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis/connectRedis.js';
import type { UsageEvent } from './usageEvent.js';
import { entryValues, readEntries, type StoredRound } from './usageStreamEntry.js';

/**
 * The copy in Redis of the usage events the instances keep (README.md). One hash tag: one cluster node.
 * Only non-blocking commands: the connection is the one the request path shares.
 */
export type UsageStream = ReturnType<typeof createUsageStream>;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    appendUsage(...keysAndArgs: string[]): Result<[string[], unknown], Context>;
    keepUsageLease(...keysAndArgs: string[]): Result<number, Context>;
    takeOverUsage(...keysAndArgs: string[]): Result<unknown, Context>;
    removeUsage(...keysAndArgs: string[]): Result<number, Context>;
  }
}

export const USAGE_STREAM_KEY = 'gateway:{usage}:events';
/**
 * How long an adopted event's acknowledgement is remembered: its other copy (Redis's, or a spool's) is
 * delivered within a spool lease or a lease of the stream, unless no instance runs for that long.
 */
const ACKNOWLEDGED_FOR_MS = 24 * 3_600_000;
export const USAGE_STREAM_GROUP = 'gateway-usage';

/** The key of the count of events a stream holds: beside it, in its hash slot. */
export function usageWaitingKey(streamKey: string): string {
  return `${streamKey}:waiting`;
}

// Every script: KEYS stream, event count, leases, rounds written; ARGV group, consumer, then its own.
const NOW = `redis.replicate_commands()
local time = redis.call('TIME')
local now = time[1] * 1000 + math.floor(time[2] / 1000)`;

/**
 * Appends the `r, n, e` triples, then reads into this consumer's pending list everything unread:
 * older entries first, its own last. A round written before (the answer was lost) is not
 * written again: its entry, found by the round's key `r`, is claimed back if need be.
 */
const APPEND = `${NOW}
redis.call('HSET', KEYS[3], ARGV[2], now)
redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], '0', 'MKSTREAM')
local ids, added = {}, 0
for i = 3, #ARGV, 3 do
  local id = redis.call('HGET', KEYS[4], ARGV[i])
  if id then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
  else
    id = redis.call('XADD', KEYS[1], '*', 'n', ARGV[i + 1], 'e', ARGV[i + 2], 'r', ARGV[i])
    redis.call('HSET', KEYS[4], ARGV[i], id)
    redis.call('INCRBY', KEYS[2], ARGV[i + 1])
    added = added + 1
  end
  ids[#ids + 1] = id
end
local read = {}
while true do
  local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1000, 'STREAMS', KEYS[1], '>')
  if not reply then break end
  for _, entry in ipairs(reply[1][2]) do read[#read + 1] = entry end
end
local unread = {}
for i = 1, #read - added do unread[i] = read[i] end
return {ids, unread}`;

const KEEP = `${NOW}
redis.call('HSET', KEYS[3], ARGV[2], now)
local summary = redis.pcall('XPENDING', KEYS[1], ARGV[1])
if summary.err or not summary[4] then return 0 end
for _, consumer in ipairs(summary[4]) do
  if consumer[1] == ARGV[2] then return tonumber(consumer[2]) end
end
return 0`;

/**
 * ARGV[3]: the lease age that makes a consumer gone; ARGV[4]: entries at most. XINFO CONSUMERS: name, pending at 2, 4.
 * A lease's age counts only from when this consumer began watching without a gap of more than half that age
 * (its field "<name> watching": last check, watching since): Redis stalled, then resumed, shows every lease old
 * on its clock, and the gap says so. A lease ended (no field) is gone at once.
 */
const TAKE_OVER = `${NOW}
local watchField = ARGV[2] .. ' watching'
local idle = tonumber(ARGV[3])
local since = now
local watch = redis.call('HGET', KEYS[3], watchField)
if watch then
  local last, from = string.match(watch, '^(%d+) (%d+)$')
  if last and now - tonumber(last) <= idle / 2 then since = tonumber(from) end
end
redis.call('HSET', KEYS[3], watchField, string.format('%d %d', now, since))
local unread = redis.pcall('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[4], 'STREAMS', KEYS[1], '>')
if type(unread) == 'table' and unread.err then return {} end
if unread then return unread[1][2] end
for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', KEYS[1], ARGV[1])) do
  local name, pending = consumer[2], consumer[4]
  local lease = redis.call('HGET', KEYS[3], name)
  if name ~= ARGV[2] and (not lease or now - math.max(tonumber(lease), since) >= idle) then
    if pending == 0 then
      redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], name)
      redis.call('HDEL', KEYS[3], name, name .. ' watching')
    else
      local ids = {}
      for _, entry in ipairs(redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', ARGV[4], name)) do
        ids[#ids + 1] = entry[1]
      end
      return redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, unpack(ids))
    end
  end
end
return {}`;

/** Acknowledges and deletes the entries ARGV[3..], taking the events of each one deleted from the count. */
const REMOVE = `
local waiting = tonumber(redis.call('GET', KEYS[2]) or '0')
for i = 3, #ARGV do
  local entry = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])[1]
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  if entry and redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then
    local fields = entry[2]
    for f = 1, #fields, 2 do
      if fields[f] == 'n' then waiting = waiting - (tonumber(fields[f + 1]) or 0) end
      if fields[f] == 'r' then redis.call('HDEL', KEYS[4], fields[f + 1]) end
    end
  end
end
redis.call('SET', KEYS[2], math.max(waiting, 0))
return waiting`;

export function createUsageStream({ redis }: { readonly redis: RedisConnection }) {
  const key = USAGE_STREAM_KEY;
  const consumer = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const keys = [key, usageWaitingKey(key), `${key}:leases`, `${key}:rounds`] as const;
  const ours = [...keys, USAGE_STREAM_GROUP, consumer] as const;
  for (const [name, lua] of Object.entries({
    appendUsage: APPEND,
    keepUsageLease: KEEP,
    takeOverUsage: TAKE_OVER,
    removeUsage: REMOVE,
  })) {
    redis.defineCommand(name, { numberOfKeys: 4, lua });
  }
  const remove = async (entryIds: readonly string[]): Promise<void> => {
    if (entryIds.length > 0) await redis.removeUsage(...ours, ...entryIds);
  };
  /** Entries that hold no event can never be delivered: removed. */
  const rounds = async (entries: unknown): Promise<StoredRound[]> => {
    const read = readEntries(entries);
    await remove(read.malformed);
    return read.rounds;
  };

  return {
    consumer,
    /** Appends one entry per round and renews the lease; with the ids, entries no instance had read, now pending here. */
    async append(events: ReadonlyArray<readonly UsageEvent[]>): Promise<{ entryIds: string[]; unread: StoredRound[] }> {
      const [entryIds, unread] = await redis.appendUsage(...ours, ...entryValues(events));
      return { entryIds, unread: await rounds(unread) };
    },
    /** Renews the lease; resolves with the number of entries pending for this instance. */
    keepAlive: async (): Promise<number> => Number(await redis.keepUsageLease(...ours)),
    /** Up to `count` entries no instance read, or else of one whose lease is `idleMs` old as this one watched it, now pending here. */
    takeOver: async (idleMs: number, count: number): Promise<StoredRound[]> =>
      rounds(await redis.takeOverUsage(...ours, String(idleMs), String(count))),
    /** Delivered: out of the group and the stream. A removal repeated subtracts nothing. */
    remove,
    /** Removes every entry pending for this instance (before writing all it keeps again). */
    async removeOwn(): Promise<void> {
      for (;;) {
        const own = (await redis.xpending(key, USAGE_STREAM_GROUP, '-', '+', 1000, consumer)) as Array<[string]>;
        if (own.length === 0) return;
        await remove(own.map(([entryId]) => entryId));
      }
    },
    /** Of these adopted events, those whose acknowledgement no instance noted before: noted now, once each. */
    async firstAcknowledged(events: readonly UsageEvent[]): Promise<UsageEvent[]> {
      const pipeline = redis.pipeline();
      for (const event of events) pipeline.set(`${key}:acknowledged:${event.id}`, '1', 'PX', ACKNOWLEDGED_FOR_MS, 'NX');
      const answers = (await pipeline.exec()) ?? [];
      return events.filter((_, i) => {
        const [err, answer] = answers[i] ?? [new Error('no answer'), null];
        if (err) throw err;
        return answer === 'OK';
      });
    },
    /** Ends the lease: the next instance to check takes over what is left. */
    async letGo(): Promise<void> {
      await redis.hdel(keys[2], consumer, `${consumer} watching`);
    },
  };
}
