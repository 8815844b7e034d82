import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import { endThenDestroy } from './createHttpServer.js';

/**
 * How long after its arrival a refusal of a caller who showed no valid key is sent. The
 * flood and the gateway share the CPU: a client that gets its 401 at once asks again at
 * once, so each of its connections costs a request per half second at most instead of
 * as many as the CPU can answer. A person who mistyped a key does not notice half a second.
 */
export const REFUSAL_DELAY_MS = 500;

/** Statuses that refuse an unknown caller: who you are (401), a spent budget (429), shed load (503). */
const DELAYED_STATUSES: ReadonlySet<number> = new Set([401, 429, 503]);

/**
 * Takes over the answer to a refusal of an unauthenticated request: it leaves `delayMs` after
 * the request arrived, whatever the checks cost meanwhile, so a revoked, an expired and a
 * never-issued key are answered at the same moment; then the connection is closed, and it
 * reads nothing more meanwhile. What waits is a timer with the socket and the answer's bytes:
 * no context, request or response of the gateway's.
 * Anything else goes at once (false: Koa answers), as does the 503 of a key seen to verify
 * here when the key service or Redis cannot answer: the gateway's own outage must not cost a
 * paying caller half a second on top of its deadline.
 */
export function holdRefusal(ctx: ParameterizedContext<AppState>, delayMs: number, arrivedAt: number): boolean {
  if (delayMs <= 0 || ctx.state.principal !== undefined || !DELAYED_STATUSES.has(ctx.status)) return false;
  if (ctx.state.knownKeyUnserved === true) return false;
  const { socket } = ctx.res;
  // Pipelined behind another answer still due: this one is sent in its turn, the connection closed after it.
  if (socket === null) {
    ctx.set('Connection', 'close');
    return false;
  }
  const bytes = rawAnswer(ctx);
  ctx.respond = false;
  socket.pause();
  setTimeout(endThenDestroy, Math.max(0, arrivedAt + delayMs - performance.now()), socket as Socket, bytes);
  return true;
}

/** The answer Koa would have sent, as bytes, closing the connection. */
function rawAnswer(ctx: ParameterizedContext<AppState>): Buffer {
  const body = Buffer.from(JSON.stringify(ctx.body));
  const headers: Record<string, unknown> = {
    ...ctx.res.getHeaders(),
    date: new Date().toUTCString(),
    'content-length': body.length,
    connection: 'close',
  };
  const lines = Object.entries(headers).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) => `${name}: ${String(one)}\r\n`),
  );
  const head = Buffer.from(
    `HTTP/1.1 ${ctx.status} ${STATUS_CODES[ctx.status] ?? ''}\r\n${lines.join('')}\r\n`,
    'latin1',
  );
  return ctx.method === 'HEAD' ? head : Buffer.concat([head, body]);
}
