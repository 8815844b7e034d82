import assert from 'node:assert/strict';
import { type TrackedKeywordNode, toKeywords } from '../../src/mappers/keywordsMapper.js';
import { PUBLIC_KEYWORDS, TRACKED_KEYWORDS } from '../fixtures/trackedKeywords.js';

const node = (keyword: string, position: number | null): TrackedKeywordNode => ({
  keyword,
  position,
  searchVolume: null,
  cluster: null,
});

describe('keywords mapper', () => {
  it('puts ranked keywords first by position, then unranked ones by text, with every field mapped', () => {
    assert.deepEqual(toKeywords(TRACKED_KEYWORDS, 50), PUBLIC_KEYWORDS);
  });

  it('orders ranked keywords by position ascending', () => {
    const keywords = toKeywords([node('c', 42), node('a', 7), node('b', 1), node('d', 100)], 10);
    assert.deepEqual(
      keywords.map((k) => k.position),
      [1, 7, 42, 100],
    );
  });

  it('breaks position ties by keyword text in code point order (U+E000 before astral)', () => {
    const astral = '\u{1F600}';
    const privateUse = '\uFFFD';
    const keywords = toKeywords([node(astral, 2), node(privateUse, 2), node('z', 2), node('Z', 2)], 10);
    assert.deepEqual(
      keywords.map((k) => k.keyword),
      ['Z', 'z', privateUse, astral],
    );
  });

  it('orders unranked keywords last, by text in code point order', () => {
    const astral = '\u{10000}';
    const privateUse = '\uE000';
    const keywords = toKeywords(
      [node(astral, null), node('b', 0), node(privateUse, 0), node('ranked', 99), node('a', null)],
      10,
    );
    assert.deepEqual(
      keywords.map((k) => k.keyword),
      ['ranked', 'a', 'b', privateUse, astral],
    );
  });

  it('reports position 0 and position null alike: position null, unranked true', () => {
    assert.deepEqual(toKeywords([node('zero', 0), node('none', null)], 10), [
      { keyword: 'none', position: null, unranked: true, volume: null, clusterLabel: null },
      { keyword: 'zero', position: null, unranked: true, volume: null, clusterLabel: null },
    ]);
  });

  it('reports a ranked keyword with unranked false and its position', () => {
    assert.deepEqual(toKeywords([node('one', 1)], 10), [
      { keyword: 'one', position: 1, unranked: false, volume: null, clusterLabel: null },
    ]);
  });

  it('takes volume from searchVolume (0 stays 0, unknown is null)', () => {
    const keywords = toKeywords(
      [
        { keyword: 'a', position: 1, searchVolume: 1234, cluster: null },
        { keyword: 'b', position: 2, searchVolume: 0, cluster: null },
        { keyword: 'c', position: 3, searchVolume: null, cluster: null },
      ],
      10,
    );
    assert.deepEqual(
      keywords.map((k) => k.volume),
      [1234, 0, null],
    );
  });

  it('takes clusterLabel from the cluster label, null without a cluster', () => {
    const keywords = toKeywords(
      [
        { keyword: 'a', position: 1, searchVolume: null, cluster: { label: 'Shoes' } },
        { keyword: 'b', position: 2, searchVolume: null, cluster: null },
      ],
      10,
    );
    assert.deepEqual(
      keywords.map((k) => k.clusterLabel),
      ['Shoes', null],
    );
  });

  it('keeps the first `limit` keywords in public order', () => {
    assert.deepEqual(toKeywords(TRACKED_KEYWORDS, 3), PUBLIC_KEYWORDS.slice(0, 3));
    assert.deepEqual(toKeywords(TRACKED_KEYWORDS, 5), PUBLIC_KEYWORDS.slice(0, 5));
    assert.deepEqual(toKeywords([], 5), []);
  });

  it('writes each keyword with exactly the fields the spec lists', () => {
    for (const keyword of toKeywords(TRACKED_KEYWORDS, 50)) {
      assert.deepEqual(Object.keys(keyword), ['keyword', 'position', 'unranked', 'volume', 'clusterLabel']);
    }
  });
});
