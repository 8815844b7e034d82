import { randomUUID } from 'node:crypto';
import { holdsKey } from '../auth/keyInUrl.js';

/** A caller's id is kept only when it is short and plain, so it is safe in logs and headers. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The caller's X-Request-Id when well formed and not a key (it is written to every log line), else a new UUID. */
export function requestIdOf(given: unknown): string {
  return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) && !holdsKey(given) ? given : randomUUID();
}
