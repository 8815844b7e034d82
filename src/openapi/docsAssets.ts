import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { strongEtag } from '../cache/cacheFields.js';

/**
 * The few files of swagger-ui-dist the docs page needs, served by the gateway itself
 * (no CDN, works offline). Only names on this list are ever read: a request names an
 * entry, never a path, so no input can reach the file system.
 */

export interface DocsAsset {
  readonly contentType: string;
  readonly body: Buffer;
  /** The same bytes gzipped, for clients that accept it (the bundle shrinks ~4x). */
  readonly gzipped: Buffer;
  readonly etag: string;
}

type AssetSource = { readonly contentType: string } & ({ readonly file: string } | { readonly text: string });

/** Runs the page: the document's URL is fixed, and swagger-ui's online validator is off. */
const DOCS_INIT_SCRIPT = `'use strict';
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    defaultModelsExpandDepth: 1,
    displayRequestDuration: true
  });
});
`;

const SOURCES: Readonly<Record<string, AssetSource>> = {
  'swagger-ui.css': { file: 'swagger-ui.css', contentType: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': { file: 'swagger-ui-bundle.js', contentType: 'text/javascript; charset=utf-8' },
  'favicon-32x32.png': { file: 'favicon-32x32.png', contentType: 'image/png' },
  'docs-init.js': { text: DOCS_INIT_SCRIPT, contentType: 'text/javascript; charset=utf-8' },
};

export const DOCS_ASSET_NAMES: readonly string[] = Object.keys(SOURCES);

const gzipped = promisify(gzip);
const distDir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const loaded = new Map<string, Promise<DocsAsset>>();

/** The named asset, read and compressed once per process; undefined for any other name. */
export function docsAsset(name: string): Promise<DocsAsset> | undefined {
  if (!Object.hasOwn(SOURCES, name)) return undefined;
  const source = SOURCES[name];
  if (source === undefined) return undefined;
  let asset = loaded.get(name);
  if (asset === undefined) {
    asset = load(source);
    // A failed read is not remembered: the next request tries again.
    asset.catch(() => loaded.delete(name));
    loaded.set(name, asset);
  }
  return asset;
}

async function load(source: AssetSource): Promise<DocsAsset> {
  const body = 'file' in source ? await readFile(join(distDir, source.file)) : Buffer.from(source.text, 'utf8');
  const etag = strongEtag(body);
  // Off the event loop: the bundle is large enough that a synchronous gzip would stall requests.
  return { contentType: source.contentType, body, gzipped: await gzipped(body), etag };
}
