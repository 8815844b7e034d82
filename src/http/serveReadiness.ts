import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { ApiError } from '../errors.js';
import type { Readiness } from './readiness.js';

const RETRY_AFTER_SECONDS = '5';

/**
 * GET /readyz: 200 while every upstream answers, else 503 in the envelope. It names
 * which dependency failed (a fixed name like `platform`), never a host or a message.
 */
export function serveReadiness(readiness: Readiness): Middleware<AppState> {
  return async (ctx) => {
    const report = await readiness.check();
    ctx.set('Cache-Control', 'no-store');
    if (!report.ready) {
      const failing = Object.keys(report.checks).filter((name) => !report.checks[name]);
      throw new ApiError('SERVICE_UNAVAILABLE', `Not ready: ${failing.join(', ')} cannot be reached.`, {
        reason: 'not_ready',
        headers: { 'Retry-After': RETRY_AFTER_SECONDS, 'Cache-Control': 'no-store' },
      });
    }
    ctx.status = 200;
    ctx.body = { status: 'ready', checks: report.checks };
  };
}
