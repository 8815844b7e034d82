import Router from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import type { AppState } from './appState.js';
import { authenticate } from './auth/authenticate.js';
import { assignRequestId } from './http/requestId.js';
import { logRequests } from './http/logRequests.js';
import { respondWithErrors } from './http/respondWithErrors.js';
import { unmatchedPaths } from './http/unmatchedPaths.js';
import { limitRequests } from './limits/limitRequests.js';
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
 * request id → request log → error envelope → router (404/405 before auth)
 *   → authenticate → request limit → usage meter → route (cache → platform → mapper).
 */
export function createApp(services: Services): Koa<AppState> {
  const app = new Koa<AppState>();
  app.silent = true; // failures are logged once, by respondWithErrors

  app.use(assignRequestId());
  app.use(logRequests(services.logger));
  app.use(respondWithErrors(services.logger));

  const router = new Router<AppState>();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  const guard = compose<Koa.ParameterizedContext<AppState>>([
    authenticate(services.authenticator),
    limitRequests(services.limiter),
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
      handleRoute(route, services),
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
  app.use(unmatchedPaths([...publicPaths, '/healthz']));
  return app;
}
