import assert from 'node:assert/strict';
import { type RankEntry, type StartEntry, toMovers } from '../../src/mappers/rankingsMapper.js';
import { EXPECTED_MOVERS, LATEST, START } from '../fixtures/rankSnapshots.js';

const entry = (keywordId: string, keyword: string, position: number | null): RankEntry => ({
  keywordId,
  keyword,
  position,
});
const start = (keywordId: string, position: number | null): StartEntry => ({ keywordId, position });

describe('rankings mapper', () => {
  it('reports every rule at once: 0/null as null, matching by id, start-only left out, largest move first', () => {
    assert.deepEqual(toMovers(LATEST, START, 100), EXPECTED_MOVERS);
  });

  it('maps a position of 0 or null on either side to null, and then delta is null', () => {
    const movers = toMovers(
      { entries: [entry('a', 'a', 0), entry('b', 'b', null), entry('c', 'c', 3), entry('d', 'd', 4)] },
      { entries: [start('a', 5), start('b', 6), start('c', 0), start('d', null)] },
      10,
    );
    assert.deepEqual(movers, [
      { keyword: 'c', from: null, to: 3, delta: null },
      { keyword: 'd', from: null, to: 4, delta: null },
      { keyword: 'a', from: 5, to: null, delta: null },
      { keyword: 'b', from: 6, to: null, delta: null },
    ]);
  });

  it('gives from null to a keyword missing from the start snapshot', () => {
    assert.deepEqual(toMovers({ entries: [entry('new', 'fresh', 8)] }, { entries: [start('old', 8)] }, 10), [
      { keyword: 'fresh', from: null, to: 8, delta: null },
    ]);
  });

  it('leaves out keywords found only in the start snapshot', () => {
    assert.deepEqual(toMovers({ entries: [] }, { entries: [start('gone', 3)] }, 10), []);
  });

  it('matches snapshots by keywordId, not by keyword text', () => {
    const movers = toMovers(
      { entries: [entry('k1', 'same text', 3), entry('k2', 'renamed', 4)] },
      { entries: [start('k9', 3), start('k2', 9)] },
      10,
    );
    assert.deepEqual(movers, [
      { keyword: 'same text', from: null, to: 3, delta: null },
      { keyword: 'renamed', from: 9, to: 4, delta: 5 },
    ]);
  });

  it('with no check on or before the start date, makes every keyword ranked now a mover from null', () => {
    const movers = toMovers(
      { entries: [entry('a', 'alpha', 20), entry('b', 'beta', 0), entry('c', 'gamma', 1), entry('d', 'delta', null)] },
      null,
      10,
    );
    assert.deepEqual(movers, [
      { keyword: 'gamma', from: null, to: 1, delta: null },
      { keyword: 'alpha', from: null, to: 20, delta: null },
    ]);
  });

  it('with no check at all, has no movers', () => {
    assert.deepEqual(toMovers(null, null, 10), []);
    assert.deepEqual(toMovers(null, START, 10), []);
  });

  it('computes delta as from minus to: positive is an improvement', () => {
    const movers = toMovers(
      { entries: [entry('up', 'up', 2), entry('down', 'down', 9)] },
      { entries: [start('up', 7), start('down', 3)] },
      10,
    );
    assert.deepEqual(movers, [
      { keyword: 'down', from: 3, to: 9, delta: -6 },
      { keyword: 'up', from: 7, to: 2, delta: 5 },
    ]);
  });

  it('counts a keyword as a mover only when from differs from to (null differs from every number)', () => {
    const movers = toMovers(
      { entries: [entry('a', 'same', 4), entry('b', 'both unranked', 0), entry('c', 'now unranked', null)] },
      { entries: [start('a', 4), start('b', null), start('c', 100)] },
      10,
    );
    assert.deepEqual(movers, [{ keyword: 'now unranked', from: 100, to: null, delta: null }]);
  });

  it('orders by move size with an unranked side as 101, but reports it as null', () => {
    const movers = toMovers(
      {
        entries: [
          entry('a', 'fell out', 0), // 50 → 101: 51
          entry('b', 'came in', 60), // 101 → 60: 41
          entry('c', 'big climb', 3), // 90 → 3: 87
          entry('d', 'small climb', 1), // 10 → 1: 9
          entry('e', 'edge', 100), // 101 → 100: 1
        ],
      },
      { entries: [start('a', 50), start('c', 90), start('d', 10)] },
      10,
    );
    assert.deepEqual(
      movers.map((m) => [m.keyword, m.from, m.to]),
      [
        ['big climb', 90, 3],
        ['fell out', 50, null],
        ['came in', null, 60],
        ['small climb', 10, 1],
        ['edge', null, 100],
      ],
    );
  });

  it('breaks ties by keyword text in code point order, putting U+E000–U+FFFF before astral characters', () => {
    const astral = '\u{1F600}'; // U+1F600: UTF-16 units D83D DE00 sort before E000
    const privateUse = '\uE000';
    const movers = toMovers(
      {
        entries: [
          entry('1', astral, 3),
          entry('2', privateUse, 3),
          entry('3', 'b', 3),
          entry('4', 'a', 3),
          entry('5', 'B', 3),
        ],
      },
      { entries: [start('1', 5), start('2', 5), start('3', 5), start('4', 5), start('5', 5)] },
      10,
    );
    assert.deepEqual(
      movers.map((m) => m.keyword),
      ['B', 'a', 'b', privateUse, astral],
    );
  });

  it('keeps the first `limit` movers in order', () => {
    assert.deepEqual(toMovers(LATEST, START, 3), EXPECTED_MOVERS.slice(0, 3));
    assert.deepEqual(toMovers(LATEST, START, 1), EXPECTED_MOVERS.slice(0, 1));
  });

  it('writes each mover with exactly keyword, from, to and delta', () => {
    for (const mover of toMovers(LATEST, START, 100))
      assert.deepEqual(Object.keys(mover), ['keyword', 'from', 'to', 'delta']);
  });
});
