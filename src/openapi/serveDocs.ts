import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import type { RouterMiddleware } from '@koa/router';
import type { Middleware } from 'koa';
import type { AppState } from '../appState.js';
import { matchesIfNoneMatch, strongEtag } from '../cache/cacheFields.js';
import { ApiError } from '../errors.js';

/**
 * GET /v1/openapi.json: the document, open to anyone and readable from any origin (it
 * describes, it holds no data), so a viewer or client generator elsewhere can load it.
 */
export function serveOpenApi(openApiJson: string): Middleware<AppState> {
  return async (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'application/json';
    ctx.body = openApiJson;
  };
}

/*
 * GET /docs: the API reference, rendered in the browser by swagger-ui from /v1/openapi.json.
 * Everything the page loads comes from this gateway (no CDN, works offline), and the
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

const DOCS_PAGE = readFileSync(new URL('./docsPage.html', import.meta.url), 'utf8');

const swaggerUi = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const SCRIPT = 'text/javascript; charset=utf-8';

/** The only assets ever read: a request names an entry, never a path, so no input reaches the file system. */
const ASSETS: Record<string, { contentType: string; file: string | URL }> = {
  'swagger-ui.css': { file: join(swaggerUi, 'swagger-ui.css'), contentType: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: join(swaggerUi, 'swagger-ui-bundle.js'), contentType: SCRIPT },
  'favicon-32x32.png': { file: join(swaggerUi, 'favicon-32x32.png'), contentType: 'image/png' },
  // Runs the page: the document's URL is fixed, and swagger-ui's online validator is off.
  'docs-init.js': { file: new URL('./docsInit.js', import.meta.url), contentType: SCRIPT },
};

const gzipped = promisify(gzip);

async function readAsset({ file, contentType }: (typeof ASSETS)[string]) {
  return assetOf(await readFile(file), contentType);
}

async function assetOf(body: Buffer, contentType: string) {
  return { contentType, body, gzipped: await gzipped(body), etag: strongEtag(body) };
}

/**
 * The document as a script the page runs before swagger-ui starts: the reference renders while the
 * page loads, so a browser (or a headless screenshot) sees it at the load event, not a spinner
 * waiting on a request made after it.
 */
const DOCUMENT_SCRIPT = 'openapi-document.js';

const loaded = new Map<string, ReturnType<typeof readAsset>>();

/** The named asset, read and compressed once per process (off the event loop: the bundle is large). */
function docsAsset(name: string) {
  const source = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (source === undefined) return undefined;
  let asset = loaded.get(name);
  if (asset === undefined) {
    asset = readAsset(source);
    // A failed read is not remembered: the next request tries again.
    asset.catch(() => loaded.delete(name));
    loaded.set(name, asset);
  }
  return asset;
}

/** Beside the nosniff that every answer gets (observeRequests). */
function setDocsHeaders(ctx: { set(name: string, value: string): void }): void {
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cross-Origin-Resource-Policy', 'same-origin');
}

export function serveDocsPage(): Middleware<AppState> {
  return async (ctx) => {
    setDocsHeaders(ctx);
    ctx.set('Content-Security-Policy', DOCS_CONTENT_SECURITY_POLICY);
    ctx.set('Cache-Control', 'no-cache');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = DOCS_PAGE;
  };
}

/** GET /docs/assets/:name — only the listed files and this app's document; any other name is 404. */
export function serveDocsAsset(openApiJson: string): RouterMiddleware<AppState> {
  let documentScript: ReturnType<typeof assetOf> | undefined;
  return async (ctx) => {
    const name = ctx.params.name ?? '';
    if (name === DOCUMENT_SCRIPT)
      documentScript ??= assetOf(Buffer.from(`window.openApiDocument = ${openApiJson};\n`), SCRIPT);
    const pending = name === DOCUMENT_SCRIPT ? documentScript : docsAsset(name);
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
    ctx.type = asset.contentType;
    const compressed = ctx.acceptsEncodings('gzip', 'identity') === 'gzip';
    if (compressed) ctx.set('Content-Encoding', 'gzip');
    ctx.body = compressed ? asset.gzipped : asset.body;
  };
}
