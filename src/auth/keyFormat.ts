import { hash } from 'node:crypto';
import { CHECKSUM_LENGTH, keyChecksum, RANDOM_LENGTH } from './keyChecksum.js';

/**
 * What can be known about a presented key without asking anyone: its form, its
 * checksum, its hash and its prefix (key-service.md "Key format").
 */

/** `atl_` + 32 random + 6 checksum characters, all base62. */
const KEY_FORM = new RegExp(`^atl_([0-9A-Za-z]{${RANDOM_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`);

/** Three base64url parts joined by dots (the signature may be empty, as in an unsigned JWT). */
const JWT_FORM = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export const KEY_PREFIX_LENGTH = 12;

/**
 * A well-formed key, reduced to what may travel further: the hash (sent to the key
 * service) and the prefix (the only part that may be logged). The plaintext stays behind.
 */
export interface WellFormedKey {
  readonly keyHash: string;
  readonly prefix: string;
}

/**
 * Kept: without it a warm hit costs 7 µs (6 %) more server CPU (compareBuilds --together, 12 rounds, 1.5–8 µs).
 *
 * Well-formed keys recently presented, by their text: a caller presents the same key on
 * every request, and its checksum and SHA-256 are then computed once, not per request.
 * Bounded, oldest first out; it holds key text only in this process's memory, as the
 * requests that carried it did.
 */
const RECENT_KEYS_MAX = 1024;
const recentKeys = new Map<string, WellFormedKey>();

/** The key's hash and prefix, or null when the text cannot be a key (wrong form or checksum). */
export function toWellFormedKey(text: string): WellFormedKey | null {
  const recent = recentKeys.get(text);
  if (recent !== undefined) return recent;
  const key = readKey(text);
  if (key === null) return null;
  if (recentKeys.size >= RECENT_KEYS_MAX) {
    const oldest = recentKeys.keys().next();
    if (oldest.done !== true) recentKeys.delete(oldest.value);
  }
  recentKeys.set(text, key);
  return key;
}

function readKey(text: string): WellFormedKey | null {
  const match = KEY_FORM.exec(text);
  if (!match) return null;
  const [, randomPart, checksum] = match;
  if (randomPart === undefined || checksum === undefined || keyChecksum(randomPart) !== checksum) return null;
  return Object.freeze({ keyHash: keyHashOf(text), prefix: text.slice(0, KEY_PREFIX_LENGTH) });
}

/**
 * Lowercase hex SHA-256 of the whole key's UTF-8 bytes: the only form the key service stores.
 * One-shot crypto.hash: no Hash object per key (measured by npm run bench).
 */
export function keyHashOf(key: string): string {
  return hash('sha256', key, 'hex');
}

/** Whether a bearer credential has the shape of a JWT (a browser session, not an API key). */
export function isJwtShaped(text: string): boolean {
  return JWT_FORM.test(text);
}
