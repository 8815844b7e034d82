import { randomBytes } from 'node:crypto';
import { BASE62_ALPHABET, keyChecksum } from '../auth/keyChecksum.js';
import { KEY_PREFIX_LENGTH, keyHashOf, toWellFormedKey } from '../auth/keyFormat.js';

/**
 * Making keys, as the key service does: `atl_` + 32 random base62 characters + the
 * 6-character base62 CRC-32 of those 32. Checking and hashing are the gateway's own
 * (src/auth), so the two sides cannot disagree about the format.
 */

export { keyHashOf };
export const KEY_PREFIX = 'atl_';
const RANDOM_LENGTH = 32;

/** A plaintext key built from 32 base62 characters (random ones, or fixed ones for demo keys). */
export function keyFromRandomPart(randomPart: string): string {
  if (!/^[0-9A-Za-z]{32}$/.test(randomPart)) throw new RangeError('a key needs exactly 32 base62 characters');
  return `${KEY_PREFIX}${randomPart}${keyChecksum(randomPart)}`;
}

/** A fresh plaintext key: 32 uniformly random base62 characters (rejection sampling, no modulo bias). */
export function newPlaintextKey(): string {
  let randomPart = '';
  while (randomPart.length < RANDOM_LENGTH) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: bytes at or above it would favour the first characters.
      if (byte < 248 && randomPart.length < RANDOM_LENGTH) randomPart += BASE62_ALPHABET[byte % 62];
    }
  }
  return keyFromRandomPart(randomPart);
}

/** True when the text has the key form and its checksum matches. */
export function isWellFormedKey(text: string): boolean {
  return toWellFormedKey(text) !== null;
}

export function keyPrefixOf(plaintext: string): string {
  return plaintext.slice(0, KEY_PREFIX_LENGTH);
}
