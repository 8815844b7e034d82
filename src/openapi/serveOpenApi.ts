import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';

/**
 * GET /v1/openapi.json: the document, open to anyone and readable from any origin (it
 * describes, it holds no data), so a viewer or client generator elsewhere can load it.
 */
export function serveOpenApi(openApiJson: string): Middleware<AppState> {
  return async (ctx) => {
    ctx.status = 200;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'application/json';
    ctx.body = openApiJson;
  };
}
