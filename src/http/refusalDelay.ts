import { setTimeout as sleep } from 'node:timers/promises';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { endThenDestroy, rawAnswer } from './createHttpServer.js';

/**
 * How long after its arrival a refusal of a caller who showed no valid key is sent. The flood and
 * the gateway share the CPU: a client that gets its 401 at once asks again at once. A person who
 * mistyped a key does not notice half a second.
 */
export const REFUSAL_DELAY_MS = 500;

/** Statuses that refuse an unknown caller: who you are (401), a spent budget (429), shed load (503). */
const DELAYED_STATUSES: ReadonlySet<number> = new Set([401, 429, 503]);

/**
 * Takes over the answer to a refusal of an unauthenticated request: it leaves `delayMs` after the
 * request arrived, whatever the checks cost, so revoked, expired and never-issued keys are answered
 * alike; then the connection is closed, reading nothing meanwhile. What waits is a timer with the
 * socket and the bytes, nothing of Koa's. Anything else goes at once (false: Koa answers), as does
 * the 503 of a known key the gateway's own trouble left unserved: no extra wait for a paying caller.
 * A refusal pipelined behind another answer still due waits just as long, then Koa sends it in its
 * turn (the promise): its timing must not tell whether its key was seen before.
 */
export function holdRefusal(
  ctx: ParameterizedContext<AppState>,
  delayMs: number,
  arrivedAt: number,
): boolean | Promise<void> {
  const { state } = ctx;
  const { socket } = ctx.res;
  if (delayMs <= 0 || state.principal !== undefined || state.knownKeyUnserved || !DELAYED_STATUSES.has(ctx.status))
    return false;
  // Pipelined behind another answer still due: this one is sent in its turn, the connection closed after it.
  if (socket === null) {
    ctx.set('Connection', 'close');
    return sleep(Math.max(0, arrivedAt + delayMs - performance.now()));
  }
  const body = Buffer.from(JSON.stringify(ctx.body));
  const headers = { ...ctx.res.getHeaders(), date: new Date().toUTCString(), 'content-length': body.length };
  const bytes = rawAnswer(ctx.status, { ...headers, connection: 'close' }, ctx.method === 'HEAD' ? '' : body);
  ctx.respond = false;
  socket.pause();
  setTimeout(endThenDestroy, Math.max(0, arrivedAt + delayMs - performance.now()), socket, bytes);
  return true;
}
