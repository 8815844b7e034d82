import { authFailure } from './authFailures.js';
import type { PresentedCredentials } from './principal.js';

/** Where a credential's scheme ends: its first whitespace. */
const WHITESPACE = /\s/;

/**
 * The one key a request presents, from `Authorization: Bearer <key>` (scheme in any case) or
 * `X-API-Key: <key>`; the 401 for none, another scheme, an empty bearer, or two different keys.
 */
export function presentedKeyText(credentials: PresentedCredentials): string {
  let only: string | undefined;
  let conflicting = false;
  const { authorizationHeaders, authorization, apiKeyHeader } = credentials;
  if (authorizationHeaders !== undefined) {
    for (const line of authorizationHeaders) {
      const token = bearerToken(line);
      if (token === undefined) continue;
      if (only === undefined) only = token;
      else if (token !== only) conflicting = true;
    }
  } else if (authorization !== undefined) only = bearerToken(authorization);
  // Repeated X-API-Key lines arrive joined by ", " (or as an array); a key never holds a comma.
  const apiKeyLines = typeof apiKeyHeader === 'string' ? [apiKeyHeader] : (apiKeyHeader ?? []);
  for (const line of apiKeyLines) {
    for (const part of line.split(',')) {
      const token = part.trim();
      if (token === '') continue;
      if (only === undefined) only = token;
      else if (token !== only) conflicting = true;
    }
  }
  if (only === undefined) throw authFailure('missing_key');
  if (conflicting) throw authFailure('conflicting_credentials');
  return only;
}

/** The token of one Authorization line; undefined for a blank line. */
function bearerToken(line: string): string | undefined {
  const value = line.trim();
  if (value === '') return undefined;
  const gap = value.search(WHITESPACE);
  const scheme = gap === -1 ? value : value.slice(0, gap);
  if (scheme.toLowerCase() !== 'bearer') throw authFailure('unsupported_scheme');
  const token = gap === -1 ? '' : value.slice(gap).trim();
  if (token === '') throw authFailure('malformed_key');
  return token;
}
