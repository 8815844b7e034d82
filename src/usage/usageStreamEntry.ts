import { z } from 'zod';
import type { UsageEvent } from './usageEvent.js';

/**
 * A round of usage events as one stream entry, so Redis's work is paid per round: `r`, the round's
 * key; `n`, its event count; `e`, JSON `[t0, principals, flat]`: each distinct `[keyId,
 * organizationId, route]` once, then `id, principal index, time` triples, the time in ms after
 * `t0`, or the text of a time that is not one (a spooled event's).
 */

/** The events of one entry, with the entry's id. */
export interface StoredRound {
  readonly entryId: string;
  readonly events: UsageEvent[];
}

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
    if (Number.isSafeInteger(atMs)) {
      t0 ??= atMs;
      flat.push(event.id, index, atMs - t0);
    } else flat.push(event.id, index, event.at);
  }
  return JSON.stringify([t0 ?? 0, principals, flat]);
}

const text = z.string().min(1);
const PackedSchema = z.tuple([
  z.number(),
  z.array(z.tuple([text, text, text])),
  z.array(z.union([z.string(), z.number()])).refine((flat) => flat.length % 3 === 0),
]);
const isText = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The events packed in an `e` field, or null when it holds none (or is not one). */
export function unpackEvents(packed: string): UsageEvent[] | null {
  let parsed: z.infer<typeof PackedSchema>;
  try {
    parsed = PackedSchema.parse(JSON.parse(packed));
  } catch {
    return null;
  }
  const [t0, principals, flat] = parsed;
  const events: UsageEvent[] = [];
  for (let i = 0; i < flat.length; i += 3) {
    const [id, index, time] = flat.slice(i, i + 3);
    const principal = typeof index === 'number' ? principals[index] : undefined;
    if (!isText(id) || !principal) return null;
    let at: string;
    if (isText(time)) at = time;
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
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const value: unknown = fields[i + 1];
    if (fields[i] === 'e' && typeof value === 'string') return unpackEvents(value);
  }
  return null;
}

/** The `r, n, e` values of one entry per round: the round's key (its first event's id), its count, its events. */
export function entryValues(rounds: ReadonlyArray<readonly UsageEvent[]>): string[] {
  return rounds.flatMap((events) => [events[0]?.id ?? '', String(events.length), packEvents(events)]);
}

/** Entries as Redis lists them (`[[id, [field, value, ...]], ...]`): their rounds, and the ids of those that hold none. */
export function readEntries(entries: unknown): { rounds: StoredRound[]; malformed: string[] } {
  const read = { rounds: [] as StoredRound[], malformed: [] as string[] };
  if (!Array.isArray(entries)) return read;
  for (const entry of entries) {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string') continue;
    const events = eventsOfFields(entry[1]);
    if (events) read.rounds.push({ entryId: entry[0], events });
    else read.malformed.push(entry[0]);
  }
  return read;
}
