import { randomBytes } from 'node:crypto';
import { BASE62_ALPHABET, keyChecksum } from '../auth/keyChecksum.js';
import { KEY_PREFIX_LENGTH, keyHashOf } from '../auth/keyFormat.js';

/**
 * Making keys, as the key service does (here its embedded stand-in): `atl_` + 32 random base62
 * characters + the 6-character base62 CRC-32 of those 32. Checking and hashing are the
 * gateway's own (src/auth), so the two sides cannot disagree about the format.
 */

export { keyHashOf };

/** A fresh plaintext key: 32 uniformly random base62 characters (rejection sampling, no modulo bias). */
export function newPlaintextKey(): string {
  let randomPart = '';
  while (randomPart.length < 32) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: bytes at or above it would favour the first characters.
      if (byte < 248 && randomPart.length < 32) randomPart += BASE62_ALPHABET[byte % 62];
    }
  }
  return `atl_${randomPart}${keyChecksum(randomPart)}`;
}

export function keyPrefixOf(plaintext: string): string {
  return plaintext.slice(0, KEY_PREFIX_LENGTH);
}
