import Router from '@koa/router';
import Koa from 'koa';
import type { AppState } from './appState.js';
import { authenticateRequest } from './auth/authenticate.js';
import { observeRequests } from './http/observeRequests.js';
import { addOperationalRoutes } from './http/operationalRoutes.js';
import { alwaysReady } from './http/readiness.js';
import { unmatchedPaths } from './http/unmatchedPaths.js';
import { takeFromLimit } from './limits/limitRequests.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { aiVisibilityRoute } from './routes/aiVisibilityRoute.js';
import { auditIssuesRoute } from './routes/auditIssuesRoute.js';
import { handleRoute } from './routes/handleRoute.js';
import { keywordsRoute } from './routes/keywordsRoute.js';
import type { PublicRoute } from './routes/publicRoute.js';
import { rankingsRoute } from './routes/rankingsRoute.js';
import type { Services } from './services.js';
import { inSpan } from './telemetry/spans.js';

/**
 * The whole request path, top to bottom:
 * observe (request id; error envelope; metrics and log line once answered)
 * → router (404/405 before auth; openapi, docs, metrics, readyz need no key)
 * → public route: authenticate → request limit → room to count it? → answer (cache → platform →
 *   mapper) → count usage.
 *
 * The public route's steps are plain calls in one handler rather than Koa layers:
 * they always run together, in this order, and each layer would cost an async call
 * and a closure per request on the path every warm call takes (npm run bench).
 */
export function createApp(services: Services): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // failures are logged once, by observeRequests

  const metrics = services.metrics ?? createGatewayMetrics();
  app.use(observeRequests(services.logger, metrics));

  const router = new Router<AppState>();
  router.get('/healthz', (ctx) => {
    ctx.state.route = '/healthz';
    ctx.body = { status: 'ok' };
  });
  // OpenAPI document, docs page, metrics, readiness: no key, answered before auth.
  const operationalPaths = addOperationalRoutes(router, {
    metrics,
    readiness: services.readiness ?? alwaysReady(),
  });

  const { authenticator, limiter, usage } = services;
  const publicRoute = <P extends Record<string, string | number>>(route: PublicRoute<P>) => {
    const answer = handleRoute(route, { ...services, metrics });
    router.get(route.path, async (ctx) => {
      ctx.state.route = route.path;
      const principal = await inSpan('auth', () => authenticateRequest(ctx, authenticator));
      ctx.state.principal = principal;
      await inSpan('limit', () => takeFromLimit(ctx, limiter, principal, metrics.limiterDecision));
      usage.ensureRoom();
      await answer(ctx, principal);
      // Every successful answer (200, or 304 for an unchanged one) counts once; failures never do.
      if (ctx.status === 200 || ctx.status === 304) usage.record(principal, route.path);
    });
    return route.path;
  };
  const publicPaths = [
    publicRoute(rankingsRoute),
    publicRoute(aiVisibilityRoute),
    publicRoute(keywordsRoute),
    publicRoute(auditIssuesRoute),
  ];

  app.use(router.routes());
  app.use(unmatchedPaths([...publicPaths, '/healthz', ...operationalPaths]));
  return app;
}
