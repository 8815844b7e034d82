import assert from 'node:assert/strict';
import type { UsageEvent } from '../../src/usage/usageEvent.js';
import {
  entryValues,
  eventsOfFields,
  packEvents,
  readEntries,
  unpackEvents,
} from '../../src/usage/usageStreamEntry.js';

const EVENT: UsageEvent = {
  id: '6f1c1e0e-8d7b-4c39-9f0a-0d6f2b7c1a11',
  keyId: 'key_1',
  organizationId: 'org_a',
  route: '/v1/api/keywords',
  at: '2026-11-21T12:00:00.123Z',
};

/** A round of `count` events: two principals and two routes taking turns, a millisecond apart. */
function round(count: number): UsageEvent[] {
  return Array.from({ length: count }, (_unused, i) => ({
    id: `${EVENT.id.slice(0, -4)}${String(i).padStart(4, '0')}`,
    keyId: i % 2 === 0 ? 'key_1' : 'key_2',
    organizationId: i % 2 === 0 ? 'org_a' : 'org_b',
    route: i % 3 === 0 ? '/v1/api/keywords' : '/v1/api/rankings',
    at: new Date(Date.parse(EVENT.at) + i).toISOString(),
  }));
}

/** An entry's fields as Redis hands them back, from what the append script is given. */
function fieldsOf(count: string, packed: string): string[] {
  return ['n', count, 'e', packed];
}

describe('usage events as stream entries', () => {
  it('round-trips a round of events through one packed field, each principal listed once', () => {
    const events = round(50);
    const packed = packEvents(events);
    assert.deepEqual(unpackEvents(packed), events);
    const [, principals] = JSON.parse(packed) as [number, unknown[]];
    assert.equal(principals.length, 4, 'two keys by two routes');
  });

  it('keeps a time that is not one (a spooled event) as its text', () => {
    const odd = { ...EVENT, at: 'yesterday' };
    assert.deepEqual(unpackEvents(packEvents([EVENT, odd])), [EVENT, odd]);
  });

  it('makes one entry of each round, keyed by its first event, with its event count', () => {
    const events = round(25);
    const values = entryValues([events.slice(0, 10), events.slice(10)]);
    assert.deepEqual(
      values.filter((_value, i) => i % 3 !== 2),
      [events[0]?.id, '10', events[10]?.id, '15'],
    );
    const back = values
      .filter((_value, i) => i % 3 === 2)
      .flatMap((packed) => eventsOfFields(fieldsOf('0', packed)) ?? []);
    assert.deepEqual(back, events);
  });

  it('finds no events in a packed field that is not one', () => {
    const [, , packed = ''] = entryValues([[EVENT]]);
    const parsed = JSON.parse(packed) as [number, unknown[], unknown[]];
    for (const broken of [
      'not json',
      '[]',
      JSON.stringify([parsed[0], parsed[1], parsed[2].slice(0, 2)]),
      JSON.stringify([parsed[0], [], parsed[2]]),
      JSON.stringify([parsed[0], parsed[1], [EVENT.id, 0, null]]),
      JSON.stringify([parsed[0], parsed[1], []]),
    ]) {
      assert.equal(unpackEvents(broken), null, broken);
    }
    assert.equal(eventsOfFields(null), null);
    assert.equal(eventsOfFields(['x', 'y']), null);
  });

  it('reads entries as Redis lists them, and names those that hold no event', () => {
    const [, count = '', packed = ''] = entryValues([[EVENT]]);
    const read = readEntries([['1-0', fieldsOf(count, packed)], ['2-0', ['x', 'y']], null]);
    assert.deepEqual(read.rounds, [{ entryId: '1-0', events: [EVENT] }]);
    assert.deepEqual(read.malformed, ['2-0']);
    assert.deepEqual(readEntries(null), { rounds: [], malformed: [] });
  });
});
