/**
 * The checksum part of an API key (key-service.md "Key format"): CRC-32 as zlib
 * computes it (IEEE 802.3, reflected polynomial 0xEDB88320), written in base62,
 * most significant digit first, left-padded with `0` to 6 characters.
 *
 * Table-driven here because node:zlib only has `crc32` from Node 22 on.
 */

export const BASE62_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** A key's random characters, which its checksum covers. */
export const RANDOM_LENGTH = 32;
export const CHECKSUM_LENGTH = 6;

const CRC32_TABLE: Uint32Array = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let bit = 0; bit < 8; bit++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * CRC-32 (zlib's) of ASCII text, as an unsigned 32-bit integer. Key text is base62
 * (its form is checked first), so its UTF-8 bytes are its char codes: the CRC runs
 * over those directly, with no byte array per request.
 */
export function crc32(asciiText: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < asciiText.length; i++) {
    const code = asciiText.charCodeAt(i);
    if (code > 0x7f) throw new RangeError('crc32 takes ASCII text only');
    // The table has 256 entries and the index is masked to 0..255, so it is always defined.
    crc = (CRC32_TABLE[(crc ^ code) & 0xff] as number) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

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

/** The 6 checksum characters for the 32 random characters of a key. */
export function keyChecksum(randomPart: string): string {
  return toBase62(crc32(randomPart), CHECKSUM_LENGTH);
}
