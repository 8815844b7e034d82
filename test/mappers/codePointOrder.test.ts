import assert from 'node:assert/strict';
import { compareCodePoints } from '../../src/mappers/codePointOrder.js';

describe('compareCodePoints', () => {
  it('orders by Unicode code point, not by UTF-16 code unit', () => {
    const astral = '\u{1F600}'; // code units D83D DE00
    for (const bmpHigh of ['\uE000', '\uF8FF', '\uFB01', '\uFFFD']) {
      assert.ok(compareCodePoints(bmpHigh, astral) < 0, `U+${bmpHigh.codePointAt(0)?.toString(16)} before U+1F600`);
      assert.ok(compareCodePoints(astral, bmpHigh) > 0);
      assert.ok(astral < bmpHigh, 'JavaScript < would get this wrong');
    }
  });

  it('sorts a mixed list as the platform does', () => {
    const list = ['b', '\u{1F600}', 'B', '\uE000', 'a', 'ab', '', '\u{10000}', 'é'];
    assert.deepEqual(list.sort(compareCodePoints), ['', 'B', 'a', 'ab', 'b', 'é', '\uE000', '\u{10000}', '\u{1F600}']);
  });

  it('puts a prefix before its extensions and answers 0 for equal text', () => {
    assert.ok(compareCodePoints('seo', 'seo tools') < 0);
    assert.ok(compareCodePoints('seo tools', 'seo') > 0);
    assert.equal(compareCodePoints('seo', 'seo'), 0);
    assert.equal(compareCodePoints('', ''), 0);
  });

  it('compares characters after an astral one correctly', () => {
    assert.ok(compareCodePoints('\u{1F600}a', '\u{1F600}b') < 0);
    assert.ok(compareCodePoints('\u{1F600}', '\u{1F601}') < 0);
  });
});
