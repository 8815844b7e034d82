import { randomUUID } from 'node:crypto';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { holdsKey } from '../auth/keyInUrl.js';

/** A caller's id is kept only when it is short and plain, so it is safe in logs and headers. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** An id that could be a key (`atl_…`) is not kept either: it would be written to every log line. */
export function isWellFormedRequestId(value: string | undefined): value is string {
  return value !== undefined && REQUEST_ID_PATTERN.test(value) && !holdsKey(value);
}

/** Every answer carries X-Request-Id: the caller's, if well formed, else a new UUID. */
export function assignRequestId(ctx: ParameterizedContext<AppState>): void {
  const given = ctx.req.headers['x-request-id'];
  const requestId = typeof given === 'string' && isWellFormedRequestId(given) ? given : randomUUID();
  ctx.state.requestId = requestId;
  ctx.res.setHeader('X-Request-Id', requestId);
}
