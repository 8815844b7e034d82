import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import type { UsageRecorder } from './usageRecorder.js';

/** Every successful answer (200, or 304 for an unchanged one) counts once; failures never do. */
export function meterUsage(usage: UsageRecorder): Middleware<AppState> {
  return async (ctx, next) => {
    await next();
    const principal = ctx.state.principal;
    if (principal && (ctx.status === 200 || ctx.status === 304)) {
      usage.record(principal, ctx.state.route ?? ctx.path);
    }
  };
}
