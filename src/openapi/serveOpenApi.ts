import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { openApiJson } from './openapiDocument.js';

/** GET /v1/openapi.json: the document, open to anyone (it describes, it holds no data). */
export function serveOpenApi(): Middleware<AppState> {
  return async (ctx) => {
    ctx.status = 200;
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.type = 'application/json';
    ctx.body = openApiJson;
  };
}
