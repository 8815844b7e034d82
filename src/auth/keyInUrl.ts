import { CHECKSUM_LENGTH, keyChecksum, RANDOM_LENGTH } from './keyChecksum.js';

/**
 * Whether a request target carries something that may be an API key, in any form a
 * caller or a tool could have produced: a path segment, a query parameter name or a
 * value holding `atl_`, or a key's 38 characters without it, however many times it was
 * percent-encoded.
 */

/**
 * Decoding rounds at most: each round can only shrink the text, and real double or
 * triple encoding stops well before this; the bound keeps a crafted target cheap.
 */
const MAX_DECODING_ROUNDS = 8;

const KEY_MARK = 'atl_';

/** A key's part after `atl_`: its random characters and their checksum. */
const KEY_BODY_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH;

/** Runs of base62 long enough to hold a key's body. */
const BASE62_RUNS = new RegExp(`[0-9A-Za-z]{${KEY_BODY_LENGTH},}`, 'g');

/** What a target must hold for a key to hide in it: the mark, an escape, or a run as long as a key's body. */
const MAY_HOLD_KEY = new RegExp(`atl_|%|[0-9A-Za-z]{${KEY_BODY_LENGTH}}`, 'i');

/**
 * Whether this piece of a URL (segment, name or value) holds the key mark or a key's body, as sent or at
 * any round of percent-decoding until decoding stops changing it (bounded). Every round is
 * looked at, not only the last: a later round may consume the mark's first letter into
 * a stray escape (`%A` + `atl_` reads as `%Aa`).
 */
export function holdsKey(piece: string): boolean {
  let current = piece.replace(/\+/g, ' ');
  for (let round = 0; ; round += 1) {
    if (current.toLowerCase().includes(KEY_MARK) || holdsKeyBody(current)) return true;
    if (round === MAX_DECODING_ROUNDS || !current.includes('%')) return false;
    const next = decodeOnce(current);
    if (next === current) return false;
    current = next;
  }
}

/** Whether a key could hide in this text at all: false for the common target, with no split or decoding. */
export function mayHoldKey(text: string): boolean {
  return MAY_HOLD_KEY.test(text);
}

/** Whether the raw request target (`/path?query`) holds a key anywhere, with its mark or without. */
export function urlHoldsKey(target: string): boolean {
  if (!mayHoldKey(target)) return false;
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);
  const query = queryStart === -1 ? '' : target.slice(queryStart + 1);
  if (path.split('/').some(holdsKey)) return true;
  // Names and values alike: `?atl_…`, `?atl_…=1` and `?x=atl_…` all put the key in the URL.
  return query.split(/[&;=]/).some(holdsKey);
}

/**
 * Whether the text holds a key without its `atl_` (its 38 characters are the whole secret):
 * a run of base62 whose first or last 38 characters end in the checksum of the 32 before.
 * A key pasted alone, after `Bearer `, or glued to letters on one side is found; two CRCs
 * per run keep a crafted target cheap, and a run that merely looks random matches the
 * checksum about once in 62^6.
 */
function holdsKeyBody(text: string): boolean {
  for (const [run] of text.matchAll(BASE62_RUNS)) {
    if (isKeyBody(run.slice(0, KEY_BODY_LENGTH)) || isKeyBody(run.slice(-KEY_BODY_LENGTH))) return true;
  }
  return false;
}

function isKeyBody(body: string): boolean {
  return keyChecksum(body.slice(0, -CHECKSUM_LENGTH)) === body.slice(-CHECKSUM_LENGTH);
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (_err: unknown) {
    // One malformed escape must not hide a well-formed one beside it: decode escape by escape.
    return text.replace(/%[0-9A-Fa-f]{2}/g, (sequence) => String.fromCharCode(Number.parseInt(sequence.slice(1), 16)));
  }
}
