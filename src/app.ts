import { METHODS } from 'node:http';
import Router, { type RouterContext } from '@koa/router';
import Koa, { type Middleware } from 'koa';
import type { AppState } from './appState.js';
import { toApiError } from './errors.js';
import { observeRequests } from './http/observeRequests.js';
import { addOperationalRoutes, fromLoopback } from './http/operationalRoutes.js';
import { alwaysReady } from './http/readiness.js';
import { refuseKeyInUrl } from './http/refuseKeyInUrl.js';
import { requestCredentials } from './http/requestCredentials.js';
import { CALLER_VARY } from './http/securityHeaders.js';
import { methodNotAllowed, routeNotFound } from './http/unmatchedPaths.js';
import { rateLimitFields } from './limits/rateLimitFields.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { buildOpenApiDocument } from './openapi/buildOpenApiDocument.js';
import { admit, refundsLimit, whenAnswerEnds } from './routes/admit.js';
import { handleRoute } from './routes/publicRoute.js';
import { PUBLIC_ROUTES } from './routes/publicRoutes.js';
import type { Services } from './services.js';

/**
 * The whole request path: observe (request id; error envelope; metrics and log line once answered)
 * → a public route by its exact path (one map lookup), else the router (404 and 405 before auth; openapi,
 * docs, metrics, readyz need no key) → public route:
 * authenticate → admit (a unit of the request limit and a place under the ceiling, together) → room
 * to count it? → answer (cache → platform → mapper) → once the answer is written whole, count usage; else give
 * back what admission took.
 * The route's steps are plain calls in one handler, not Koa layers: they always run together, in this
 * order, and each layer would cost an async call and a closure per warm request.
 */
export function createApp(services: Services): Koa<AppState> {
  const metrics = services.metrics ?? createGatewayMetrics();
  const trustedProxyHops = services.trustedProxyHops ?? 0;
  const { authenticator, admission, usage } = services;
  const observe = observeRequests(services.logger, metrics, {
    refusalDelayMs: services.refusalDelayMs ?? 0,
    trustedProxyHops,
  });
  const { app, router, getRoute } = routedApp([observe, refuseKeyInUrl()]);
  const openApiJson = JSON.stringify(buildOpenApiDocument(PUBLIC_ROUTES, { publicBaseUrl: services.publicBaseUrl }));
  const operational = { metrics, readiness: services.readiness ?? alwaysReady() };
  addOperationalRoutes(router, operational, {
    describe: { openApiJson },
    watch: !services.watchOnAdminPort,
    // Without an admin port, metrics stay private to this machine; probes reach health and readiness from anywhere.
    metricsFor: (ctx) => fromLoopback(ctx, trustedProxyHops),
  });
  for (const route of PUBLIC_ROUTES) {
    const answer = handleRoute(route, { ...services, metrics });
    getRoute(route.path, async (ctx) => {
      ctx.state.route = route.path;
      // Every answer here, refusals included, depends on the key presented.
      ctx.res.setHeader('Vary', CALLER_VARY);
      const { principal, grant, now } = await admit(
        ctx,
        admission,
        () => authenticator.authenticate(requestCredentials(ctx, trustedProxyHops)),
        services.now,
        metrics.limiterDecision,
      );
      let status = 500;
      try {
        usage.ensureRoom();
        await answer(ctx, principal, now);
        status = ctx.status;
      } catch (err: unknown) {
        status = toApiError(err).status;
        throw err;
      } finally {
        // The refused answer's RateLimit says what is left once its unit is back.
        if (refundsLimit(status) && !ctx.res.headersSent)
          ctx.res.setHeader('RateLimit', rateLimitFields({ ...grant, remaining: grant.remaining + 1 }).RateLimit);
        // Counted only for a success the client received whole: what admission took is kept or given back
        // by the answer written (a shutdown's 503 or a 400 may replace the handler's), once it is out or lost.
        whenAnswerEnds(ctx.res, ctx.req.socket, (written) => {
          if (written === 200 || written === 304) {
            usage.record(principal, route.path);
            grant.keep();
          } else grant.giveBack(refundsLimit(written ?? status));
        });
      }
    });
  }
  return app;
}

/** The admin listener's app (ADMIN_PORT): health, metrics and readiness, nothing else. */
export function createAdminApp(services: Pick<Services, 'logger' | 'metrics' | 'readiness'>): Koa<AppState> {
  const metrics = services.metrics ?? createGatewayMetrics();
  const { app, router } = routedApp([observeRequests(services.logger, metrics)]);
  const operational = { metrics, readiness: services.readiness ?? alwaysReady() };
  addOperationalRoutes(router, operational, { describe: null, watch: true });
  return app;
}

type RouteAnswer = (ctx: RouterContext<AppState>) => Promise<void>;

/**
 * A Koa app running `first`, then the router, whose routes the caller adds. `getRoute` adds a GET
 * route (HEAD too) that a request for its exact path reaches by one map lookup, before the fallback
 * and the router's matching and chain; the router still knows the path, for its 405 and OPTIONS.
 */
function routedApp(first: Middleware<AppState>[]): {
  app: Koa<AppState>;
  router: Router<AppState>;
  getRoute: (path: string, answer: RouteAnswer) => void;
} {
  const app = new Koa<AppState>();
  app.silent = true; // failures are logged once, by observeRequests
  for (const middleware of first) app.use(middleware);
  const direct = new Map<string, RouteAnswer>();
  app.use((ctx, next) => {
    const answer = ctx.method === 'GET' || ctx.method === 'HEAD' ? direct.get(ctx.path) : undefined;
    return answer === undefined ? next() : answer(ctx as RouterContext<AppState>);
  });
  // Every method Node parses is known to the router, so an unknown path with any method falls
  // through to the 404 fallback and a known path with another method is a 405. Strict and
  // case-sensitive: each route has one path, and a trailing slash or another case is a 404.
  const router = new Router<AppState>({ methods: [...METHODS], strict: true, sensitive: true });
  app.use(routeNotFound());
  app.use(router.routes());
  app.use(router.allowedMethods({ throw: true, methodNotAllowed, notImplemented: methodNotAllowed }));
  const getRoute = (path: string, answer: RouteAnswer): void => {
    direct.set(path, answer);
    router.get(path, answer);
  };
  return { app, router, getRoute };
}
