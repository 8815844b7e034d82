import Router from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import type { AppState } from './appState.js';
import { authenticate } from './auth/authenticate.js';
import { assignRequestId } from './http/requestId.js';
import { logRequests } from './http/logRequests.js';
import { addOperationalRoutes } from './http/operationalRoutes.js';
import { alwaysReady } from './http/readiness.js';
import { respondWithErrors } from './http/respondWithErrors.js';
import { unmatchedPaths } from './http/unmatchedPaths.js';
import { limitRequests } from './limits/limitRequests.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { recordRequests } from './metrics/recordRequests.js';
import { aiVisibilityRoute } from './routes/aiVisibilityRoute.js';
import { auditIssuesRoute } from './routes/auditIssuesRoute.js';
import { handleRoute } from './routes/handleRoute.js';
import { keywordsRoute } from './routes/keywordsRoute.js';
import type { PublicRoute } from './routes/publicRoute.js';
import { rankingsRoute } from './routes/rankingsRoute.js';
import type { Services } from './services.js';
import { meterUsage } from './usage/meterUsage.js';

/**
 * The whole request path, top to bottom:
 * request id → request log → request metrics → error envelope → router (404/405 before auth;
 *   openapi, docs, metrics, readyz need no key)
 *   → authenticate → request limit → usage meter → route (cache → platform → mapper).
 */
export function createApp(services: Services): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // failures are logged once, by respondWithErrors

  app.use(assignRequestId());
  app.use(logRequests(services.logger));
  const metrics = services.metrics ?? createGatewayMetrics();
  app.use(recordRequests(metrics));
  app.use(respondWithErrors(services.logger));

  const router = new Router<AppState>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  // OpenAPI document, docs page, metrics, readiness: no key, answered before auth.
  const operationalPaths = addOperationalRoutes(router, {
    metrics,
    readiness: services.readiness ?? alwaysReady(),
  });

  const guard = compose<Koa.ParameterizedContext<AppState>>([
    authenticate(services.authenticator),
    limitRequests(services.limiter, metrics.limiterDecision),
    meterUsage(services.usage),
  ]);
  const publicRoute = <P extends Record<string, string | number>>(route: PublicRoute<P>) => {
    router.get(
      route.path,
      async (ctx, next) => {
        ctx.state.route = route.path;
        await next();
      },
      guard,
      handleRoute(route, { ...services, metrics }),
    );
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
