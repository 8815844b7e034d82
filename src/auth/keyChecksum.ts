import { crc32 } from 'node:zlib';

/** A key's checksum (key-service.md "Key format"): zlib's CRC-32 in base62, left-padded to 6 characters. */

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** A key's random characters, which its checksum covers. */
export const RANDOM_LENGTH = 32;
export const CHECKSUM_LENGTH = 6;

/** A non-negative integer in base62, left-padded with `0` to `width` characters. */
export function toBase62(value: number, width: number): string {
  let rest = value;
  let digits = '';
  do {
    digits = BASE62_ALPHABET.charAt(rest % 62) + digits;
    rest = Math.floor(rest / 62);
  } while (rest > 0);
  return digits.padStart(width, '0');
}

export function keyChecksum(randomPart: string): string {
  return toBase62(crc32(randomPart), CHECKSUM_LENGTH);
}

/** Whether a key's body (its random part, then a checksum) ends in the checksum of the part before. */
export function isKeyBody(body: string): boolean {
  return keyChecksum(body.slice(0, -CHECKSUM_LENGTH)) === body.slice(-CHECKSUM_LENGTH);
}
