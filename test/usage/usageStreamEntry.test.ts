import assert from 'node:assert/strict';
import type { UsageEvent } from '../../src/usage/usageEvent.js';
import {
  autoClaimReply,
  entryFields,
  eventOfFields,
  goneConsumers,
  readGroupEntries,
} from '../../src/usage/usageStreamEntry.js';

const EVENT: UsageEvent = {
  id: '6f1c1e0e-8d7b-4c39-9f0a-0d6f2b7c1a11',
  keyId: 'key_1',
  organizationId: 'org_a',
  route: '/v1/api/keywords',
  at: '2026-11-21T12:00:00.123Z',
};

describe('usage events as stream entries', () => {
  it('round-trips an event through its five fields, the time as epoch milliseconds', () => {
    const fields = entryFields(EVENT);
    assert.deepEqual(fields, [
      'i',
      EVENT.id,
      'k',
      'key_1',
      'o',
      'org_a',
      'r',
      '/v1/api/keywords',
      't',
      String(Date.parse(EVENT.at)),
    ]);
    assert.deepEqual(eventOfFields(fields), EVENT);
  });

  it('finds no event in an entry that lacks a field or carries a time that is not one', () => {
    const fields = entryFields(EVENT);
    assert.equal(eventOfFields(fields.slice(0, 8)), null);
    assert.equal(eventOfFields([...fields.slice(0, 9), 'soon']), null);
    assert.equal(eventOfFields(null), null);
  });

  it('reads XREADGROUP replies in both shapes, and names the entries that hold no event', () => {
    const entries = [
      ['1-0', entryFields(EVENT)],
      ['2-0', ['x', 'y']],
    ];
    for (const reply of [[['stream', entries]], ['stream', entries]]) {
      const read = readGroupEntries(reply);
      assert.deepEqual(read.events, [{ entryId: '1-0', event: EVENT }]);
      assert.deepEqual(read.malformed, ['2-0']);
    }
    assert.deepEqual(readGroupEntries(null), { events: [], malformed: [] });
  });

  it('reads XAUTOCLAIM replies: the next cursor and the claimed entries', () => {
    const { cursor, read } = autoClaimReply(['5-0', [['3-0', entryFields(EVENT)]], []]);
    assert.equal(cursor, '5-0');
    assert.deepEqual(read.events, [{ entryId: '3-0', event: EVENT }]);
    assert.deepEqual(autoClaimReply(null).cursor, '0-0');
  });

  it('names the consumers that hold nothing and have been idle long enough, never itself', () => {
    const reply = [
      ['name', 'gone', 'pending', 0, 'idle', 5000],
      ['name', 'holding', 'pending', 3, 'idle', 9000],
      ['name', 'recent', 'pending', 0, 'idle', 10],
      ['name', 'me', 'pending', 0, 'idle', 9000],
    ];
    assert.deepEqual(goneConsumers(reply, 1000, 'me'), ['gone']);
    assert.deepEqual(goneConsumers(null, 1000, 'me'), []);
  });
});
