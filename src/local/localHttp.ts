import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import { bodyParser } from '@koa/bodyparser';
import type Router from '@koa/router';
import Koa from 'koa';
import { listenOn } from '../http/listenOn.js';

/** What the two embedded upstreams share: service tokens, error answers, serving and closing. */

export function newServiceToken(): string {
  return randomBytes(24).toString('base64url');
}

/** 401 with no body, as both upstream contracts say, unless `Authorization: Bearer <token>` (constant-time). */
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
 * Answers every error in the upstream's own shape: what the body parser or a handler throws
 * keeps its 4xx status (anything else is a 500), and an unmatched path (404) or method (405,
 * its Allow header set by the router) gets a body too.
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
      const status = statusOf(err);
      ctx.status = status ?? 500;
      ctx.body = bodyFor(ctx.status, status !== null && err instanceof Error ? err.message : 'internal error');
    }
  };
}

function statusOf(err: unknown): number | null {
  const status = typeof err === 'object' && err !== null ? (err as { status?: unknown }).status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : null;
}

/**
 * An embedded upstream's app: errors in its shape, the service token first (401 before
 * anything else), JSON bodies up to 1 MB, then the routes; 405 with Allow for another method.
 */
export function upstreamApp(token: string, router: Router, bodyFor: (status: number, message: string) => unknown): Koa {
  const app = new Koa();
  app.silent = true; // a stand-in: its failures are answered, not logged
  app.use(answerErrors(bodyFor));
  app.use(requireServiceToken(token));
  app.use(bodyParser({ enableTypes: ['json'], jsonLimit: '1mb' }));
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}

export interface ServedApp {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:41235 */
  readonly url: string;
  /** Closes the server and every open connection (keep-alive and event streams included). */
  close(): Promise<void>;
}

export async function serve(app: Koa, host: string, port: number): Promise<ServedApp> {
  const server = createServer(app.callback());
  const url = await listenOn(server, host, port);
  return {
    url,
    close: () =>
      new Promise<void>((resolve, reject) => {
        if (!server.listening) return resolve();
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
