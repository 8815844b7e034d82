import assert from 'node:assert/strict';
import { keyChecksum, toBase62 } from '../../src/auth/keyChecksum.js';

describe('keyChecksum', () => {
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
