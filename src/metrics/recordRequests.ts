import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from './gatewayMetrics.js';

/**
 * Counts every answered request and its latency. The route label is a route pattern
 * (never the raw path, which is unbounded caller input): the public route set by the
 * chain, else the pattern the router matched, else `unmatched`.
 */
export function recordRequests(metrics: GatewayMetrics): Middleware<AppState> {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } finally {
      metrics.httpRequest(routeLabel(ctx), ctx.method, ctx.status, (performance.now() - started) / 1000);
    }
  };
}

function routeLabel(ctx: { state: AppState }): string {
  if (ctx.state.route !== undefined) return ctx.state.route;
  // @koa/router records the pattern it matched on the context.
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  return typeof matched === 'string' ? matched : 'unmatched';
}
