import { createHash, randomBytes } from 'node:crypto';

/**
 * Key format of the key service: `atl_` + 32 random base62 characters + the 6-character
 * base62 CRC-32 of those 32 characters. node:zlib's crc32 exists only from Node 22, so
 * the table-driven IEEE CRC-32 (the one zlib computes) is written out here.
 */

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'atl_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
/** `atl_` + 8: the part of a key that may be shown and logged. */
const PREFIX_LENGTH = 12;

const KEY_PATTERN = /^atl_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;

const CRC_TABLE = ((): Uint32Array => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 (IEEE 802.3, reflected, as zlib's crc32) of bytes, as an unsigned 32-bit number. */
export function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** A non-negative integer in base62, most significant digit first, left-padded with `0`. */
export function toBase62(value: number, width: number): string {
  let rest = value;
  let digits = '';
  do {
    digits = BASE62_ALPHABET[rest % 62] + digits;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  return digits.padStart(width, '0');
}

/** The 6 checksum characters for the 32 random characters of a key. */
export function keyChecksum(randomPart: string): string {
  return toBase62(crc32(Buffer.from(randomPart, 'ascii')), CHECKSUM_LENGTH);
}

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
  const match = KEY_PATTERN.exec(text);
  return match !== null && keyChecksum(match[1] ?? '') === match[2];
}

/** Lowercase hex SHA-256 of the whole plaintext key: the only form the key service stores. */
export function keyHashOf(plaintext: string): string {
  return createHash('sha256').update(plaintext, 'utf8').digest('hex');
}

export function keyPrefixOf(plaintext: string): string {
  return plaintext.slice(0, PREFIX_LENGTH);
}
