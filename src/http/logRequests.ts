import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import type { AppState } from '../appState.js';

/**
 * One JSON line per request. Fields are values pino escapes; the key never appears,
 * only its prefix, and the query string (which may hold a misplaced key) is left out.
 */
export function logRequests(logger: Logger): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      const principal = ctx.state.principal;
      logger.info(
        {
          requestId: ctx.state.requestId,
          method: ctx.method,
          route: ctx.state.route ?? null,
          path: ctx.path,
          status: ctx.status,
          durationMs: Math.round((performance.now() - started) * 100) / 100,
          organizationId: principal?.organizationId ?? null,
          keyPrefix: principal?.keyPrefix ?? null,
        },
        'request',
      );
    }
  };
}
