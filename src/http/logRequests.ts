import { holdsKey, mayHoldKey } from '../auth/keyInUrl.js';

/** Longer paths and user agents are cut, so one request cannot flood the log. */
const MAX_LOGGED_LENGTH = 256;
export const cut = (text: string) => (text.length > MAX_LOGGED_LENGTH ? `${text.slice(0, MAX_LOGGED_LENGTH)}…` : text);

/** The path with key-like segments (`atl_…` or a bare key body, however encoded) redacted, and bounded. */
export function loggablePath(path: string): string {
  if (!mayHoldKey(path)) return cut(path);
  return cut(path.replace(/[^/]+/g, (segment) => (holdsKey(segment) ? '[redacted]' : segment)));
}
