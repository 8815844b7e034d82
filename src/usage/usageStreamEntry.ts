import type { UsageEvent } from './usageEvent.js';

/**
 * A round of usage events (what one instance wrote to Redis at once) as one Redis stream
 * entry, and back. Per entry rather than per event: the stream's work (append, read, ack,
 * delete) and its reply parsing are paid per round, not per call.
 *
 * An entry has two fields: `n`, the number of events (the scripts keep the backlog count
 * with it), and `e`, the events as JSON: `[t0, principals, events]`, where `principals`
 * lists each distinct `[keyId, organizationId, route]` of the round once and `events` is
 * flat `id, principal index, time` triples, the time in milliseconds after `t0` (the round's
 * first time, epoch milliseconds). A time that is not one (a spooled event's odd text) is
 * kept as its text.
 */

/** The events of one entry, with the entry's id. */
export interface StoredRound {
  readonly entryId: string;
  readonly events: UsageEvent[];
}

/** What a read returned: the rounds, and the ids of entries that hold none (to be removed). */
export interface StreamRead {
  readonly rounds: StoredRound[];
  readonly malformed: string[];
}

/** Field names: the event count, and the packed events. */
const COUNT_FIELD = 'n';
const EVENTS_FIELD = 'e';

/** The packed events of one entry (the `e` field). */
export function packEvents(events: readonly UsageEvent[]): string {
  const principals: Array<[string, string, string]> = [];
  const indexOf = new Map<string, number>();
  const flat: Array<string | number> = [];
  let t0: number | null = null;
  for (const event of events) {
    const principalKey = `${event.keyId}\n${event.organizationId}\n${event.route}`;
    let index = indexOf.get(principalKey);
    if (index === undefined) {
      index = principals.length;
      principals.push([event.keyId, event.organizationId, event.route]);
      indexOf.set(principalKey, index);
    }
    const atMs = Date.parse(event.at);
    if (!Number.isSafeInteger(atMs)) {
      flat.push(event.id, index, event.at);
      continue;
    }
    t0 ??= atMs;
    flat.push(event.id, index, atMs - t0);
  }
  return JSON.stringify([t0 ?? 0, principals, flat]);
}

/** The events packed in an `e` field, or null when it holds none (or is not one). */
export function unpackEvents(packed: string): UsageEvent[] | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(packed);
  } catch {
    return null;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return null;
  const [t0, principals, flat]: unknown[] = parsed;
  if (typeof t0 !== 'number' || !Array.isArray(principals) || !Array.isArray(flat) || flat.length % 3 !== 0) {
    return null;
  }
  const valid = principals.every(
    (principal: unknown) =>
      Array.isArray(principal) &&
      principal.length === 3 &&
      principal.every((part: unknown) => typeof part === 'string' && part !== ''),
  );
  if (!valid) return null;
  const known = principals as Array<[string, string, string]>;
  const events: UsageEvent[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    const id: unknown = flat[i];
    const index: unknown = flat[i + 1];
    const time: unknown = flat[i + 2];
    const principal = typeof index === 'number' ? known[index] : undefined;
    if (typeof id !== 'string' || id === '' || !principal) return null;
    let at: string;
    if (typeof time === 'string' && time !== '') at = time;
    else if (typeof time === 'number' && Number.isSafeInteger(t0 + time)) at = new Date(t0 + time).toISOString();
    else return null;
    const [keyId, organizationId, route] = principal;
    events.push({ id, keyId, organizationId, route, at });
  }
  return events.length > 0 ? events : null;
}

/** The events an entry's flat field list holds, or null when it holds none. */
export function eventsOfFields(fields: unknown): UsageEvent[] | null {
  if (!Array.isArray(fields)) return null;
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name: unknown = fields[i];
    const value: unknown = fields[i + 1];
    if (typeof name === 'string' && typeof value === 'string') values.set(name, value);
  }
  const packed = values.get(EVENTS_FIELD);
  return packed === undefined ? null : unpackEvents(packed);
}

/** The events in pieces of at most `size`, each one entry: one entry is one POST at most. */
export function entryValues(events: readonly UsageEvent[], size: number): string[] {
  const values: string[] = [];
  for (let start = 0; start < events.length; start += size) {
    const piece = events.slice(start, start + size);
    values.push(String(piece.length), packEvents(piece));
  }
  return values;
}

/**
 * Appends one entry per `count, packed` pair of ARGV and adds the counts to the backlog
 * count (KEYS[2]), in one call; returns the backlog count after them.
 */
export const APPEND_SCRIPT = `
for i = 1, #ARGV, 2 do
  redis.call('XADD', KEYS[1], '*', '${COUNT_FIELD}', ARGV[i], '${EVENTS_FIELD}', ARGV[i + 1])
  redis.call('INCRBY', KEYS[2], ARGV[i])
end
return tonumber(redis.call('GET', KEYS[2]) or '0')
`;

/**
 * Acknowledges (group ARGV[1]) and deletes the entries ARGV[2..] lists, taking from the
 * backlog count (KEYS[2]) the events of each entry this call deleted (so a removal repeated
 * subtracts nothing); returns the backlog count after them.
 */
export const REMOVE_SCRIPT = `
local waiting = tonumber(redis.call('GET', KEYS[2]) or '0')
for i = 2, #ARGV do
  local entry = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])[1]
  local events = 0
  if entry then
    local fields = entry[2]
    for f = 1, #fields, 2 do
      if fields[f] == '${COUNT_FIELD}' then events = tonumber(fields[f + 1]) or 0 end
    end
  end
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  if redis.call('XDEL', KEYS[1], ARGV[i]) == 1 then waiting = waiting - events end
end
if waiting < 0 then waiting = 0 end
redis.call('SET', KEYS[2], waiting)
return waiting
`;

/** Entries as XREADGROUP (per stream) or XAUTOCLAIM (second element) list them: `[[id, [field, value, ...]], ...]`. */
export function readEntries(entries: unknown): StreamRead {
  const read: StreamRead = { rounds: [], malformed: [] };
  if (!Array.isArray(entries)) return read;
  for (const entry of entries) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') continue;
    const entryId = entry[0];
    const events = eventsOfFields(entry[1]);
    if (events) read.rounds.push({ entryId, events });
    else read.malformed.push(entryId);
  }
  return read;
}

/**
 * XREADGROUP's reply for one stream: `[[key, entries]]` as Redis sends it, `[key, entries]` as
 * ioredis hands a single stream's reply on, or null when nothing is new.
 */
export function readGroupEntries(reply: unknown): StreamRead {
  if (!Array.isArray(reply)) return readEntries(null);
  if (typeof reply[0] === 'string') return readEntries(reply[1]);
  return Array.isArray(reply[0]) ? readEntries(reply[0][1]) : readEntries(null);
}

/** XAUTOCLAIM's reply: `[next cursor, entries, deleted ids]`. */
export function autoClaimReply(reply: unknown): { cursor: string; read: StreamRead } {
  if (!Array.isArray(reply) || typeof reply[0] !== 'string') return { cursor: '0-0', read: readEntries(null) };
  return { cursor: reply[0], read: readEntries(reply[1]) };
}

/**
 * Consumers XINFO CONSUMERS lists (`[[name, n, pending, p, idle, ms, ...], ...]`) that hold
 * nothing and have not read for `minIdleMs`: gone (a running instance reads every second).
 */
export function goneConsumers(reply: unknown, minIdleMs: number, self: string): string[] {
  if (!Array.isArray(reply)) return [];
  const gone: string[] = [];
  for (const entry of reply) {
    if (!Array.isArray(entry)) continue;
    const info = new Map<string, unknown>();
    for (let i = 0; i + 1 < entry.length; i += 2) info.set(String(entry[i]), entry[i + 1]);
    const name = info.get('name');
    if (typeof name !== 'string' || name === self) continue;
    if (Number(info.get('pending')) === 0 && Number(info.get('idle')) >= minIdleMs) gone.push(name);
  }
  return gone;
}
