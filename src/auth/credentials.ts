import { authFailure } from './authFailures.js';
import type { PresentedCredentials } from './principal.js';

/**
 * The one key a request presents, from `Authorization: Bearer <key>` (scheme in any case) or
 * `X-API-Key: <key>`; the 401 for none, another scheme, an empty bearer, or two different keys.
 */
export function presentedKeyText(credentials: PresentedCredentials): string {
  const [only, ...others] = [...bearerTokens(credentials), ...apiKeyHeaderValues(credentials.apiKeyHeader)];
  if (only === undefined) throw authFailure('missing_key');
  if (others.some((token) => token !== only)) throw authFailure('conflicting_credentials');
  return only;
}

function bearerTokens(credentials: PresentedCredentials): string[] {
  const lines = credentials.authorizationHeaders ?? [credentials.authorization ?? []].flat();
  const tokens: string[] = [];
  for (const line of lines) {
    const value = line.trim();
    if (value === '') continue;
    const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(value);
    if (match?.[1]?.toLowerCase() !== 'bearer') throw authFailure('unsupported_scheme');
    const token = (match[2] ?? '').trim();
    if (token === '') throw authFailure('malformed_key');
    tokens.push(token);
  }
  return tokens;
}

/** Repeated X-API-Key lines arrive joined by ", " (or as an array); a key never holds a comma. */
function apiKeyHeaderValues(header: string | readonly string[] | undefined): string[] {
  const parts = [header ?? []].flat().flatMap((line) => line.split(','));
  return parts.map((part) => part.trim()).filter((value) => value !== '');
}
