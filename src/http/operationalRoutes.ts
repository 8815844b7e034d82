import type Router from '@koa/router';
import type { RouterMiddleware } from '@koa/router';
import ipaddr from 'ipaddr.js';
import type { ParameterizedContext } from 'koa';
import type { AppState } from '../appState.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { serveDocsAsset, serveDocsPage, serveOpenApi } from '../openapi/serveDocs.js';
import type { Readiness } from './readiness.js';
import { clientAddress } from './requestCredentials.js';

/** Health, metrics and readiness: for operators' probes and scrapers. */
export const WATCH_PATHS = ['/healthz', '/metrics', '/readyz'] as const;

/** Which routes a listener serves. */
export interface OperationalGroups {
  /** The OpenAPI document (serialized once) and docs page, public; null on the admin listener. */
  readonly describe: { readonly openApiJson: string } | null;
  /** Health, readiness and metrics; with ADMIN_PORT set they leave the public port, which answers them 404. */
  readonly watch: boolean;
  /** Who may read /metrics (cross-organization totals); others get 404. Unset: anyone who reaches the listener. */
  readonly metricsFor?: (ctx: ParameterizedContext<AppState>) => boolean;
}

/**
 * Whether the client address (behind `hops` trusted proxies, the one they wrote) is a loopback one. A
 * proxy on this machine forwarding outsiders is not enough, unless TRUSTED_PROXY_HOPS says it writes X-Forwarded-For.
 */
export function fromLoopback(ctx: ParameterizedContext<AppState>, hops: number): boolean {
  const address = clientAddress(ctx.req.socket.remoteAddress, ctx.req.headers['x-forwarded-for'], hops);
  return ipaddr.isValid(address) && ipaddr.process(address).range() === 'loopback';
}

/**
 * Routes that describe and watch the gateway: none needs a key or touches an organization's data.
 * /readyz answers `{ status, checks }` at once (a balancer's check never waits for a probe): 200 while
 * serving, 503 with Retry-After while starting or draining; each dependency by a fixed name, never a host
 * or an error text. Not the error envelope: not being ready is its answer, not a failure.
 */
export function addOperationalRoutes(
  router: Router<AppState>,
  { metrics, readiness }: { readonly metrics: GatewayMetrics; readonly readiness: Readiness },
  groups: OperationalGroups,
): void {
  const [healthPath, metricsPath, readinessPath] = WATCH_PATHS;
  const metricsFor = groups.metricsFor ?? (() => true);
  type Routes = Record<string, RouterMiddleware<AppState>>;
  const describeRoutes: Routes = groups.describe
    ? {
        '/v1/openapi.json': serveOpenApi(groups.describe.openApiJson),
        '/docs': serveDocsPage(),
        '/docs/assets/:name': serveDocsAsset(groups.describe.openApiJson),
      }
    : {};
  const watchRoutes: Routes = {
    [healthPath]: (ctx) => {
      ctx.body = { status: 'ok' }; // nothing is asked of any upstream
    },
    [metricsPath]: async (ctx) => {
      if (!metricsFor(ctx)) return; // left unanswered: the 404 of any unknown path
      const { contentType, text } = await metrics.exposition();
      ctx.set({ 'Cache-Control': 'no-store', 'Content-Type': contentType });
      ctx.body = text;
    },
    [readinessPath]: (ctx) => {
      const { ready, phase, checks } = readiness.report();
      ctx.set('Cache-Control', 'no-store');
      if (!ready) ctx.set('Retry-After', '5');
      ctx.status = ready ? 200 : 503;
      ctx.body = { status: phase, checks };
    },
  };
  for (const [path, handler] of Object.entries({ ...describeRoutes, ...(groups.watch ? watchRoutes : {}) })) {
    router.get(path, (ctx, next) => {
      ctx.state.route = path;
      return handler(ctx, next);
    });
  }
}
