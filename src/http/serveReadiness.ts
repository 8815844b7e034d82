import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import type { Readiness } from './readiness.js';

const RETRY_AFTER_SECONDS = '5';

/**
 * GET /readyz: `{ status, checks }` in one shape either way, answered at once (a balancer's
 * check never waits for a probe): 200 while serving, 503 with Retry-After while starting or
 * draining. `checks` holds each shared dependency's last known state by a fixed name like
 * `platform`, never a host, an address or an error text (those go to the log when a
 * dependency goes down). Not the error envelope: not being ready is this route's answer,
 * not a failure of the request.
 */
export function serveReadiness(readiness: Readiness): Middleware<AppState> {
  return (ctx) => {
    const report = readiness.report();
    ctx.set('Cache-Control', 'no-store');
    if (!report.ready) ctx.set('Retry-After', RETRY_AFTER_SECONDS);
    ctx.status = report.ready ? 200 : 503;
    ctx.body = { status: report.phase, checks: report.checks };
  };
}
