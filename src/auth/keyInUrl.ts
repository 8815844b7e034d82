import { CHECKSUM_LENGTH, isKeyBody, RANDOM_LENGTH } from './keyChecksum.js';

/** Each decoding round can only shrink the text; the bound keeps a crafted target cheap. */
const MAX_DECODING_ROUNDS = 8;
const KEY_MARK = 'atl_';
const KEY_BODY_LENGTH = RANDOM_LENGTH + CHECKSUM_LENGTH;
const MARK_OR_ESCAPE = new RegExp(`${KEY_MARK}|%`, 'i');

/**
 * Whether this piece of a URL holds the key mark or a key's body at any round of percent-decoding:
 * a later round may consume the mark's first letter into a stray escape (`%A` + `atl_` reads `%Aa`).
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
  return MARK_OR_ESCAPE.test(text) || holdsKeyBody(text, false);
}

/** Whether the raw request target (`/path?query`) holds a key anywhere, with its mark or without. */
export function urlHoldsKey(target: string): boolean {
  if (!mayHoldKey(target)) return false;
  const [path = '', ...query] = target.split('?');
  // In the query, names and values alike: `?atl_…`, `?atl_…=1` and `?x=atl_…` all put the key in the URL.
  return path.split('/').some(holdsKey) || query.join('?').split(/[&;=]/).some(holdsKey);
}

/**
 * A run of base62 whose first or last 38 characters end in the checksum of the 32 before (with
 * `checksums` false: a run long enough). One pass, where a regular expression would rescan runs.
 */
function holdsKeyBody(text: string, checksums = true): boolean {
  let runStart = 0;
  for (let i = 0; i <= text.length; i += 1) {
    if (i < text.length && isBase62(text.charCodeAt(i))) continue;
    if (i - runStart >= KEY_BODY_LENGTH) {
      if (!checksums) return true;
      if (isKeyBody(text.slice(runStart, runStart + KEY_BODY_LENGTH)) || isKeyBody(text.slice(i - KEY_BODY_LENGTH, i)))
        return true;
    }
    runStart = i + 1;
  }
  return false;
}

function isBase62(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122);
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (_err: unknown) {
    // One malformed escape must not hide a well-formed one beside it: decode escape by escape.
    return text.replace(/%[0-9A-Fa-f]{2}/g, (sequence) => String.fromCharCode(Number.parseInt(sequence.slice(1), 16)));
  }
}
