import assert from 'node:assert/strict';
import { crc32 } from 'node:zlib';
import { keyChecksum, toBase62 } from '../../src/auth/keyChecksum.js';
import { KEY_PREFIX_LENGTH, keyHashOf, toWellFormedKey } from '../../src/auth/keyFormat.js';
import { newPlaintextKey } from '../../src/local/keyStore.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';

const keyPrefixOf = (key: string) => key.slice(0, KEY_PREFIX_LENGTH);

describe('key material (key-service.md "Key format")', () => {
  it("computes zlib's CRC-32 (IEEE)", () => {
    assert.equal(crc32('123456789'), 0xcbf43926);
    assert.equal(crc32(''), 0);
    assert.equal(crc32('The quick brown fox jumps over the lazy dog'), 0x414fa339);
  });

  it('writes the checksum in base62, most significant digit first, padded to 6 with 0', () => {
    assert.equal(toBase62(0, 6), '000000');
    assert.equal(toBase62(61, 6), '00000z');
    assert.equal(toBase62(62, 6), '000010');
    assert.equal(toBase62(0xffffffff, 6), '4gfFC3');
    const random = 'abcdefghijklmnopqrstuvwxyzABCDEF';
    assert.equal(keyChecksum(random), toBase62(crc32(random), 6));
  });

  it('makes fresh keys of the form atl_ + 32 + 6 with a matching checksum, all different', () => {
    const keys = new Set(Array.from({ length: 200 }, () => newPlaintextKey()));
    assert.equal(keys.size, 200);
    for (const key of keys) {
      assert.match(key, /^atl_[0-9A-Za-z]{38}$/);
      assert.ok(toWellFormedKey(key), key);
    }
  });

  it('refuses text that is not a key, or whose checksum does not match', () => {
    const randomPart = '0123456789abcdefghijABCDEFGHIJxy';
    const key = `atl_${randomPart}${keyChecksum(randomPart)}`;
    assert.ok(toWellFormedKey(key));
    const lastChar = key.at(-1) === 'A' ? 'B' : 'A';
    for (const bad of [
      key.slice(0, -1) + lastChar,
      key.slice(0, -1),
      `${key}0`,
      key.replace('atl_', 'atk_'),
      key.replace('0', '-'),
      '',
    ]) {
      assert.equal(toWellFormedKey(bad), null, bad);
    }
  });

  it('hashes the whole key with SHA-256 (lowercase hex) and shows its first 12 characters as prefix', () => {
    assert.equal(keyHashOf('atl_x'), 'c32a60b1847291c789bc1c5a5c325c225254d376cf88ca7cd6d0f7f3003cb9bd');
    assert.match(keyHashOf(LOCAL_KEYS.demo), /^[0-9a-f]{64}$/);
    assert.equal(keyPrefixOf(LOCAL_KEYS.demo), 'atl_DemoRead');
  });

  it('gives every seeded local key a valid checksum and a distinct prefix', () => {
    const values = Object.values(LOCAL_KEYS);
    for (const key of values) assert.ok(toWellFormedKey(key), key);
    assert.equal(new Set(values.map(keyPrefixOf)).size, values.length);
  });
});
