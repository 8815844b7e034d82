/**
 * Whether a request target carries something that may be an API key, in any form a
 * caller or a tool could have produced: a path segment, a query parameter name or a
 * value holding `atl_`, however many times it was percent-encoded.
 */

/**
 * Decoding rounds at most: each round can only shrink the text, and real double or
 * triple encoding stops well before this; the bound keeps a crafted target cheap.
 */
const MAX_DECODING_ROUNDS = 8;

const KEY_MARK = 'atl_';

/**
 * Whether this piece of a URL (segment, name or value) holds the key mark, as sent or at
 * any round of percent-decoding until decoding stops changing it (bounded). Every round is
 * looked at, not only the last: a later round may consume the mark's first letter into
 * a stray escape (`%A` + `atl_` reads as `%Aa`).
 */
export function holdsKeyMark(piece: string): boolean {
  let current = piece.replace(/\+/g, ' ');
  for (let round = 0; ; round += 1) {
    if (current.toLowerCase().includes(KEY_MARK)) return true;
    if (round === MAX_DECODING_ROUNDS || !current.includes('%')) return false;
    const next = decodeOnce(current);
    if (next === current) return false;
    current = next;
  }
}

/** Whether the raw request target (`/path?query`) holds the key mark anywhere. */
export function urlHoldsKey(target: string): boolean {
  // Neither the mark nor an escape: nothing can hide a key (the common case skips the split).
  if (!/atl_|%/i.test(target)) return false;
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);
  const query = queryStart === -1 ? '' : target.slice(queryStart + 1);
  if (path.split('/').some(holdsKeyMark)) return true;
  // Names and values alike: `?atl_…`, `?atl_…=1` and `?x=atl_…` all put the key in the URL.
  return query.split(/[&;=]/).some(holdsKeyMark);
}

function decodeOnce(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch (_err: unknown) {
    // One malformed escape must not hide a well-formed one beside it: decode escape by escape.
    return text.replace(/%[0-9A-Fa-f]{2}/g, (sequence) => String.fromCharCode(Number.parseInt(sequence.slice(1), 16)));
  }
}
