import assert from 'node:assert/strict';
import { toUtcTimestamp } from '../../src/mappers/utcTimestamp.js';

describe('toUtcTimestamp', () => {
  it('converts any RFC 3339 offset to UTC ending in Z', () => {
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00+01:00'), '2026-11-20T13:05:00.000Z');
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00-05:30'), '2026-11-20T19:35:00.000Z');
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00+00:00'), '2026-11-20T14:05:00.000Z');
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00Z'), '2026-11-20T14:05:00.000Z');
  });

  it('crosses day, month and year boundaries', () => {
    assert.equal(toUtcTimestamp('2027-01-01T00:30:00+01:00'), '2026-12-31T23:30:00.000Z');
    assert.equal(toUtcTimestamp('2026-12-31T23:30:00-01:00'), '2027-01-01T00:30:00.000Z');
  });

  it('keeps fractional seconds to the millisecond', () => {
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00.25+01:00'), '2026-11-20T13:05:00.250Z');
    assert.equal(toUtcTimestamp('2026-11-20T14:05:00.123456Z'), '2026-11-20T14:05:00.123Z');
  });

  it('accepts the lowercase t and z RFC 3339 allows', () => {
    assert.equal(toUtcTimestamp('2026-11-20t14:05:00z'), '2026-11-20T14:05:00.000Z');
  });

  it('refuses text that is not an RFC 3339 date-time', () => {
    for (const text of [
      '',
      'yesterday',
      '2026-11-20',
      '2026-11-20T14:05:00',
      '2026-11-20T14:05+01:00',
      '1795183500000',
      '2026-13-40T14:05:00Z',
      '2026-02-30T10:00:00Z',
      '2026-04-31T10:00:00+01:00',
      '2026-11-20T25:05:00Z',
      '2026-11-20T14:60:00Z',
    ]) {
      assert.throws(() => toUtcTimestamp(text), TypeError, JSON.stringify(text));
    }
  });
});
