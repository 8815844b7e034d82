import { setTimeout as sleep } from 'node:timers/promises';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';

/**
 * How long a refusal of a caller who showed no valid key waits before it is sent. The
 * flood and the gateway share the CPU: a client that gets its 401 at once asks again at
 * once, so each of its connections costs a request per half second at most instead of
 * as many as the CPU can answer. A timer holds no work and a few bytes; a person who
 * mistyped a key does not notice half a second.
 */
export const REFUSAL_DELAY_MS = 500;

/** Statuses that refuse an unknown caller: who you are (401), a spent budget (429), shed load (503). */
const DELAYED_STATUSES: ReadonlySet<number> = new Set([401, 429, 503]);

/**
 * Waits `delayMs` before a refusal of an unauthenticated request is sent; anything else goes at once,
 * as does the 503 of a key seen to verify here when the key service or Redis cannot answer: the
 * gateway's own outage must not cost a paying caller half a second on top of its deadline.
 */
export async function delayRefusal(ctx: ParameterizedContext<AppState>, delayMs: number): Promise<void> {
  if (delayMs <= 0 || ctx.state.principal !== undefined || !DELAYED_STATUSES.has(ctx.status)) return;
  if (ctx.state.knownKeyUnserved === true) return;
  await sleep(delayMs);
}
