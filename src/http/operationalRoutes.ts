import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { serveDocsAsset, serveDocsPage } from '../openapi/serveDocs.js';
import { serveOpenApi } from '../openapi/serveOpenApi.js';
import type { Readiness } from './readiness.js';
import { clientAddress } from './requestCredentials.js';
import { serveReadiness } from './serveReadiness.js';

export interface OperationalServices {
  readonly metrics: GatewayMetrics;
  readonly readiness: Readiness;
}

/** Health, metrics and readiness: for operators' probes and scrapers. */
export const WATCH_PATHS = ['/healthz', '/metrics', '/readyz'] as const;

/**
 * Which routes a listener serves: `describe`, the OpenAPI document (serialized once: it never
 * changes while the process runs) and docs page, public; null on the admin listener.
 * `watch`, health, readiness and metrics (for operators: with ADMIN_PORT set they leave
 * the public port, which then answers them 404).
 */
export interface OperationalGroups {
  readonly describe: { readonly openApiJson: string } | null;
  readonly watch: boolean;
  /**
   * Who may read /metrics (cross-organization totals); others get 404. Unset: anyone who reaches
   * the listener (the admin port, kept off the public balancer).
   */
  readonly metricsFor?: (ctx: ParameterizedContext<AppState>) => boolean;
}

/**
 * Whether the request comes from this machine: its client address (behind `hops` trusted
 * proxies, the one they wrote; else the peer's) is a loopback one. A proxy on this machine
 * forwarding outsiders is not enough, unless TRUSTED_PROXY_HOPS says it writes X-Forwarded-For.
 */
export function fromLoopback(ctx: ParameterizedContext<AppState>, hops: number): boolean {
  const address = clientAddress(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], hops);
  return /^(127\.|::ffff:127\.)/.test(address) || address === '::1';
}

/**
 * The routes that describe and watch the gateway: the OpenAPI document, the docs
 * page and its assets, metrics and readiness. None needs a key, none touches an
 * organization's data, so they are answered before authentication.
 */
export function addOperationalRoutes(
  router: Router<AppState>,
  services: OperationalServices,
  groups: OperationalGroups,
): void {
  type Route = [string, RouterMiddleware<AppState>];
  const describeRoutes: Route[] = groups.describe
    ? [
        ['/v1/openapi.json', serveOpenApi(groups.describe.openApiJson)],
        ['/docs', serveDocsPage()],
        ['/docs/assets/:name', serveDocsAsset()],
      ]
    : [];
  const [healthPath, metricsPath, readinessPath] = WATCH_PATHS;
  const watchRoutes: Route[] = [
    [healthPath, serveHealth],
    [metricsPath, serveMetrics(services.metrics, groups.metricsFor)],
    [readinessPath, serveReadiness(services.readiness)],
  ];
  const routes = [...describeRoutes, ...(groups.watch ? watchRoutes : [])];
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
}

/** GET /metrics: the Prometheus text exposition format. */
function serveMetrics(
  metrics: GatewayMetrics,
  allowed: OperationalGroups['metricsFor'] = () => true,
): RouterMiddleware<AppState> {
  return async (ctx) => {
    if (!allowed(ctx)) return; // left unanswered: the 404 of any unknown path
    const { contentType, text } = await metrics.exposition();
    ctx.set('Cache-Control', 'no-store');
    ctx.body = text;
    ctx.set('Content-Type', contentType);
  };
}

/** The process is up and answering: nothing is asked of any upstream. */
const serveHealth: RouterMiddleware<AppState> = (ctx) => {
  ctx.body = { status: 'ok' };
};
