import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import type Router from '@koa/router';
import Koa from 'koa';
import { listenOn } from '../http/listenOn.js';

/** The embedded stand-in's HTTP side for both upstreams: Koa on a free loopback port behind a random token. */

export type ServedUpstream = Awaited<ReturnType<typeof serveUpstream>>;

/**
 * Serves the routes behind, in order: errors in the upstream's shape (`bodyFor`), the service
 * token (401 with no body before anything else, as both contracts say), JSON bodies up to 1 MB;
 * 405 with Allow for another method.
 */
export async function serveUpstream(router: Router, bodyFor: (status: number, message: string) => unknown) {
  const token = randomBytes(24).toString('base64url');
  const app = new Koa();
  app.silent = true; // a stand-in: its failures are answered, not logged
  app.use(answerErrors(bodyFor));
  app.use(requireServiceToken(token));
  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '1mb' }));
  app.use(router.routes());
  app.use(router.allowedMethods());
  const server = createServer(app.callback());
  const url = await listenOn(server, '127.0.0.1', 0);
  return {
    /** Base URL without a trailing slash, e.g. http://127.0.0.1:41235 */
    url,
    /** The service token callers must present. */
    token,
    /** Closes the server and every open connection (keep-alive and event streams included). */
    close: (): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        if (!server.listening) return resolve();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

/** `Authorization: Bearer <token>`, compared in constant time. */
function requireServiceToken(token: string): Koa.Middleware {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  const expected = digest(token);
  return async (ctx, next) => {
    const presented = /^Bearer\s+(.+)$/i.exec(ctx.get('authorization'))?.[1]?.trim();
    if (!presented || !timingSafeEqual(digest(presented), expected)) {
      ctx.body = null; // before the status: Koa makes a null body after it a 204
      ctx.status = 401;
      return;
    }
    await next();
  };
}

/**
 * What the body parser or a handler throws keeps its 4xx status (anything else is a 500), and
 * an unmatched path (404) or method (405, its Allow header set by the router) gets a body too.
 */
function answerErrors(bodyFor: (status: number, message: string) => unknown): Koa.Middleware {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.body === undefined && ctx.status >= 400) {
        const { status } = ctx; // Koa's unmatched 404 is implicit: a body alone would make it a 200
        ctx.body = bodyFor(status, ctx.message);
        ctx.status = status;
      }
    } catch (err: unknown) {
      const status = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
      const known = typeof status === 'number' && status >= 400 && status < 500 && err instanceof Error;
      ctx.status = known ? status : 500;
      ctx.body = bodyFor(ctx.status, known ? err.message : 'internal error');
    }
  };
}
