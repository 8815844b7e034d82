import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { serveMetrics } from '../metrics/serveMetrics.js';
import { serveDocsAsset, serveDocsPage } from '../openapi/serveDocs.js';
import { serveOpenApi } from '../openapi/serveOpenApi.js';
import type { Readiness } from './readiness.js';
import { serveReadiness } from './serveReadiness.js';

export interface OperationalServices {
  readonly metrics: GatewayMetrics;
  readonly readiness: Readiness;
}

/**
 * The routes that describe and watch the gateway: the OpenAPI document, the docs
 * page and its assets, metrics and readiness. None needs a key, none touches an
 * organization's data, so they are answered before authentication.
 * Returns the paths, so unmatched methods on them answer 405.
 */
export function addOperationalRoutes(router: Router<AppState>, services: OperationalServices): string[] {
  const routes: Array<[string, RouterMiddleware<AppState>]> = [
    ['/v1/openapi.json', serveOpenApi()],
    ['/docs', serveDocsPage()],
    ['/docs/assets/:name', serveDocsAsset()],
    ['/metrics', serveMetrics(services.metrics)],
    ['/readyz', serveReadiness(services.readiness)],
  ];
  for (const [path, handler] of routes) {
    router.get(
      path,
      async (ctx, next) => {
        ctx.state.route = path;
        await next();
      },
      handler,
    );
  }
  return routes.map(([path]) => path);
}
