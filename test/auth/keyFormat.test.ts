import assert from 'node:assert/strict';
import { isJwtShaped, keyHashOf, toWellFormedKey } from '../../src/auth/keyFormat.js';
import { testKey, withBadChecksum } from '../support/keys.js';

const KNOWN_KEY = 'atl_3f9Kx2LmAbCdEfGhIjKlMnOpQrStUvWx28FvTi';

describe('keyFormat', () => {
  describe('toWellFormedKey', () => {
    it('accepts a key with the right form and checksum, giving its hash and prefix', () => {
      assert.deepEqual(toWellFormedKey(KNOWN_KEY), {
        // sha256 of the whole key, computed independently (Python hashlib).
        keyHash: '04547c9c9e84a9706977bfbccc6937ffb131c25deb98b2d3e7b8176323f14d45',
        prefix: 'atl_3f9Kx2Lm',
      });
    });

    it('accepts keys made by the test helper', () => {
      const key = testKey('helper');
      assert.equal(key.length, 42);
      assert.notEqual(toWellFormedKey(key), null);
    });

    it('refuses a wrong checksum', () => {
      assert.equal(toWellFormedKey(withBadChecksum(KNOWN_KEY)), null);
      assert.equal(toWellFormedKey('atl_3f9Kx2LmAbCdEfGhIjKlMnOpQrStUvWx28FvTj'), null);
    });

    it('gives the same answer for a key presented again, also after many other keys', () => {
      const first = toWellFormedKey(KNOWN_KEY);
      assert.deepEqual(toWellFormedKey(KNOWN_KEY), first);
      for (let i = 0; i < 3000; i++) {
        const other = testKey(`other ${i}`);
        assert.equal(toWellFormedKey(other)?.keyHash, keyHashOf(other));
      }
      assert.deepEqual(toWellFormedKey(KNOWN_KEY), first);
      assert.equal(toWellFormedKey(withBadChecksum(KNOWN_KEY)), null);
    });

    it('refuses every other form', () => {
      const malformed = [
        '',
        'atl_',
        KNOWN_KEY.slice(0, -1), // 41 characters
        `${KNOWN_KEY}0`, // 43 characters
        KNOWN_KEY.replace('atl_', 'ATL_'),
        KNOWN_KEY.replace('atl_', 'atk_'),
        KNOWN_KEY.replace('3f9K', '3f-K'),
        KNOWN_KEY.replace('3f9K', '3f K'),
        ` ${KNOWN_KEY}`,
        KNOWN_KEY.replace('Ab', 'Äb'),
        'not a key at all',
      ];
      for (const text of malformed) assert.equal(toWellFormedKey(text), null, JSON.stringify(text));
    });
  });

  describe('keyHashOf', () => {
    it('is the lowercase hex SHA-256 of the whole key', () => {
      assert.equal(keyHashOf(KNOWN_KEY), '04547c9c9e84a9706977bfbccc6937ffb131c25deb98b2d3e7b8176323f14d45');
    });
  });

  describe('isJwtShaped', () => {
    it('recognises three base64url parts joined by dots', () => {
      assert.equal(isJwtShaped('eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMTkifQ.c2lnbmF0dXJl_-'), true);
      assert.equal(isJwtShaped('eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1In0.'), true);
    });

    it('does not take keys or other text for a JWT', () => {
      assert.equal(isJwtShaped(KNOWN_KEY), false);
      assert.equal(isJwtShaped('a.b'), false);
      assert.equal(isJwtShaped('a.b.c.d'), false);
      assert.equal(isJwtShaped('a+b.c.d'), false);
    });
  });
});
