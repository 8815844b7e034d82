import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from './gatewayMetrics.js';

/** GET /metrics: the Prometheus text exposition format (text/plain; version=0.0.4). */
export function serveMetrics(metrics: GatewayMetrics): Middleware<AppState> {
  return async (ctx) => {
    const { contentType, text } = await metrics.exposition();
    ctx.status = 200;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = text;
    ctx.set('Content-Type', contentType);
  };
}
