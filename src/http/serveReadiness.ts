import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import type { Readiness } from './readiness.js';

const RETRY_AFTER_SECONDS = '5';

/**
 * GET /readyz: `{ checks }` in one shape either way, 200 when every check passes, else
 * 503 with Retry-After, so a load balancer and a person read the same body. A check is
 * a fixed name like `platform`, never a host or an upstream's message (those go to the
 * log, once per readiness run). Not the error envelope: not being ready is this route's
 * answer, not a failure of the request.
 */
export function serveReadiness(readiness: Readiness): Middleware<AppState> {
  return async (ctx) => {
    const report = await readiness.check();
    ctx.set('Cache-Control', 'no-store');
    if (!report.ready) ctx.set('Retry-After', RETRY_AFTER_SECONDS);
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { checks: report.checks };
  };
}
