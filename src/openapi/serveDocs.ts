import type { RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { matchesIfNoneMatch } from '../cache/cacheFields.js';
import { ApiError } from '../errors.js';
import { docsAsset } from './docsAssets.js';

/**
 * GET /docs: the API reference, rendered in the browser by swagger-ui from
 * /v1/openapi.json. Everything the page loads comes from this gateway, and the
 * Content-Security-Policy forbids anything else (no inline script, no other origin).
 */

export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const DOCS_PAGE = `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>SEO platform public REST API: reference</title>
    <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
    <link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
  </head>
  <body>
    <div id="swagger-ui"></div>
    <script src="/docs/assets/swagger-ui-bundle.js"></script>
    <script src="/docs/assets/docs-init.js"></script>
  </body>
</html>
`;

/** Headers every docs answer carries. */
function setDocsHeaders(ctx: { set(name: string, value: string): void }): void {
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
}

export function serveDocsPage(): Middleware<AppState> {
  return async (ctx) => {
    setDocsHeaders(ctx);
    ctx.set('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
    ctx.set('Cache-Control', 'no-cache');
    ctx.status = 200;
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  };
}

/** GET /docs/assets/:name — only the listed files; any other name is 404. */
export function serveDocsAsset(): RouterMiddleware<AppState> {
  return async (ctx) => {
    const name = ctx.params.name ?? '';
    const pending = docsAsset(name);
    if (pending === undefined) {
      throw new ApiError('NOT_FOUND', 'No such documentation asset.', { reason: 'route_not_found' });
    }
    const asset = await pending;
    setDocsHeaders(ctx);
    ctx.set('Cache-Control', 'public, max-age=3600');
    ctx.set('ETag', asset.etag);
    ctx.vary('Accept-Encoding');
    if (matchesIfNoneMatch(ctx.get('If-None-Match'), asset.etag)) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.type = asset.contentType;
    if (ctx.acceptsEncodings('gzip', 'identity') === 'gzip') {
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = asset.gzipped;
    } else {
      ctx.body = asset.body;
    }
  };
}
