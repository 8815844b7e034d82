import assert from 'node:assert/strict';
import { crc32, keyChecksum, toBase62 } from '../../src/auth/keyChecksum.js';

describe('keyChecksum', () => {
  describe('crc32 (zlib IEEE)', () => {
    it('matches the standard check value for "123456789"', () => {
      assert.equal(crc32('123456789'), 0xcbf43926);
    });

    it('matches zlib for the empty input and a pangram', () => {
      assert.equal(crc32(''), 0);
      assert.equal(crc32('The quick brown fox jumps over the lazy dog'), 0x414fa339);
    });

    it('answers an unsigned 32-bit number', () => {
      const value = crc32('3f9Kx2LmAbCdEfGhIjKlMnOpQrStUvWx');
      assert.ok(value >= 0 && value <= 0xffffffff);
    });
  });

  describe('toBase62', () => {
    it('pads with 0 to the width, most significant digit first', () => {
      assert.equal(toBase62(0, 6), '000000');
      assert.equal(toBase62(61, 6), '00000z');
      assert.equal(toBase62(62, 6), '000010');
      assert.equal(toBase62(0xffffffff, 6), '4gfFC3');
    });
  });

  describe('keyChecksum', () => {
    // Vectors computed independently with Python's zlib.crc32.
    it('gives the checksum zlib gives for known random parts', () => {
      assert.equal(keyChecksum('3f9Kx2LmAbCdEfGhIjKlMnOpQrStUvWx'), '28FvTi');
      assert.equal(keyChecksum('00000000000000000000000000000000'), '2wjyrI');
    });
  });
});
