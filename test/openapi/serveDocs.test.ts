import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { DOCS_CONTENT_SECURITY_POLICY } from '../../src/openapi/serveDocs.js';
import { listenHardened, rawExchange } from '../http/listenHardened.js';
import { fakeServices } from '../support/fakeServices.js';

describe('GET /docs and its assets', () => {
  let server: Awaited<ReturnType<typeof listenHardened>>;

  before(async () => {
    server = await listenHardened(createApp(fakeServices()));
  });
  after(async () => {
    await server.close();
  });

  it('serves the page without a key, under a strict Content-Security-Policy', async () => {
    const res = await fetch(`${server.url}/docs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    assert.equal(res.headers.get('content-security-policy'), DOCS_CONTENT_SECURITY_POLICY);
    assert.match(DOCS_CONTENT_SECURITY_POLICY, /default-src 'none'/);
    assert.match(DOCS_CONTENT_SECURITY_POLICY, /script-src 'self'(;|$)/);
    assert.doesNotMatch(DOCS_CONTENT_SECURITY_POLICY, /unsafe-|https?:|\*/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = await res.text();
    assert.doesNotMatch(html, /<script>|https?:\/\//, 'no inline script, no other origin');
    for (const asset of html.matchAll(/(?:src|href)="([^"]+)"/g)) assert.match(asset[1] ?? '', /^\/docs\/assets\//);
  });

  it('serves the swagger-ui bundle from the installed package, gzipped when accepted, with a validator', async () => {
    const res = await fetch(`${server.url}/docs/assets/swagger-ui-bundle.js`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    assert.match(await res.text(), /SwaggerUIBundle/);
    const etag = res.headers.get('etag');
    assert.ok(etag);
    const again = await fetch(`${server.url}/docs/assets/swagger-ui-bundle.js`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
  });

  it('answers 404 in the envelope for any name not on its list, however the path is spelt', async () => {
    for (const name of [
      'index.html',
      'package.json',
      '..%2Fpackage.json',
      '%2e%2e%2f%2e%2e%2fpackage.json',
      'constructor',
      '__proto__',
    ]) {
      const res = await fetch(`${server.url}/docs/assets/${name}`);
      assert.equal(res.status, 404, name);
      const body = (await res.json()) as { data: null; errors: Array<{ code: string }> };
      assert.equal(body.data, null);
      assert.equal(body.errors[0]?.code, 'NOT_FOUND');
    }
    // Dot segments sent as they are, which fetch would have normalized away.
    const raw = await rawExchange(
      server.port,
      'GET /docs/assets/../../../package.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n',
    );
    assert.match(raw, /^HTTP\/1\.1 404 /);
    assert.doesNotMatch(raw, /seo-public-rest-gateway/);
  });
});
