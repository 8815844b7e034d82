import type { UsageEvent } from './usageEvent.js';

/**
 * A usage event as a Redis stream entry, and back. Five short fields, the same in every
 * entry (a stream stores repeated field names once per node), and the time as epoch
 * milliseconds rather than RFC 3339 text: entries stay small in Redis.
 */

/** An event read from the stream, with the entry that holds it. */
export interface StoredEvent {
  readonly entryId: string;
  readonly event: UsageEvent;
}

/** What a read returned: the events, and the ids of entries that hold no event (to be removed). */
export interface StreamRead {
  readonly events: StoredEvent[];
  readonly malformed: string[];
}

/** The entry's field names, in the order eventValues gives their values. */
const FIELDS = ['i', 'k', 'o', 'r', 't'] as const;

/** The values of an event's entry, in FIELDS order. */
export function eventValues(event: UsageEvent): string[] {
  return [event.id, event.keyId, event.organizationId, event.route, String(Date.parse(event.at))];
}

/** Field and value pairs for one XADD. */
export function entryFields(event: UsageEvent): string[] {
  return eventValues(event).flatMap((value, i) => [FIELDS[i] ?? '', value]);
}

/**
 * Appends the events whose values ARGV lists one after another (FIELDS order), one entry
 * each, in one call; returns the stream's length after them.
 */
export const APPEND_SCRIPT = `
for i = 1, #ARGV, ${FIELDS.length} do
  redis.call('XADD', KEYS[1], '*', ${FIELDS.map((name, i) => `'${name}', ARGV[i + ${i}]`).join(', ')})
end
return redis.call('XLEN', KEYS[1])
`;

/** The event an entry's flat field list holds, or null when it is not one. */
export function eventOfFields(fields: unknown): UsageEvent | null {
  if (!Array.isArray(fields)) return null;
  const values = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const name: unknown = fields[i];
    const value: unknown = fields[i + 1];
    if (typeof name === 'string' && typeof value === 'string') values.set(name, value);
  }
  const id = values.get('i');
  const keyId = values.get('k');
  const organizationId = values.get('o');
  const route = values.get('r');
  const atMs = Number(values.get('t'));
  if (!id || !keyId || !organizationId || !route || !Number.isSafeInteger(atMs)) return null;
  return { id, keyId, organizationId, route, at: new Date(atMs).toISOString() };
}

/** Entries as XREADGROUP (per stream) or XAUTOCLAIM (second element) list them: `[[id, [field, value, ...]], ...]`. */
export function readEntries(entries: unknown): StreamRead {
  const read: StreamRead = { events: [], malformed: [] };
  if (!Array.isArray(entries)) return read;
  for (const entry of entries) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') continue;
    const entryId = entry[0];
    const event = eventOfFields(entry[1]);
    if (event) read.events.push({ entryId, event });
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
