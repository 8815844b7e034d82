import assert from 'node:assert/strict';
import type { Authenticator } from '../../src/auth/principal.js';
import { assertSafeFailure, type ServedApp, serveApp } from '../support/callApi.js';
import { fakeAuthenticator } from '../support/fakeServices.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

const ROUTE_PATHS = ['/v1/api/rankings', '/v1/api/ai-visibility/summary', '/v1/api/keywords', '/v1/api/audit-issues'];

describe('unmatched paths and methods', () => {
  let app: ServedApp;
  let authentications = 0;

  before(async () => {
    const real = fakeAuthenticator();
    const counting: Authenticator = {
      authenticate(credentials) {
        authentications++;
        return real.authenticate(credentials);
      },
    };
    app = await serveApp({ authenticator: counting });
  });
  beforeEach(() => {
    authentications = 0;
  });
  after(async () => {
    await app.close();
  });

  it('answers 404 NOT_FOUND in the envelope for unknown paths under /v1/api/, before authentication', async () => {
    for (const path of [
      '/v1/api/unknown',
      '/v1/api/',
      '/v1/api',
      '/v1/api/rankings/extra',
      '/v1/api/ai-visibility',
      '/v2/api/rankings',
      '/v1/api/keywords.json',
    ]) {
      for (const key of [null, 'not-a-known-key', 'key-org-a']) {
        const answer = await app.call(`${path}?site=example.com`, { key });
        assert.equal(answer.status, 404, `${path} with ${String(key)}`);
        assertSafeFailure(answer, 'NOT_FOUND');
      }
    }
    assert.equal(authentications, 0, 'the authenticator was never asked');
  });

  it('answers 405 METHOD_NOT_ALLOWED with Allow for other methods on the four routes, before authentication', async () => {
    for (const path of ROUTE_PATHS) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND']) {
        for (const key of [null, 'key-org-a']) {
          const answer = await app.call(`${path}?site=example.com`, { key, method });
          assert.equal(answer.status, 405, `${method} ${path}`);
          assert.equal(answer.headers.get('allow'), 'GET, HEAD');
          assertSafeFailure(answer, 'METHOD_NOT_ALLOWED');
        }
      }
    }
    assert.equal(authentications, 0, 'the authenticator was never asked');
  });

  it('answers HEAD on a route as GET, without a body', async () => {
    const served = await serveApp({ platform: stubPlatform(() => keywordsData()) });
    try {
      const got = await served.call('/v1/api/keywords?site=example.com');
      const head = await served.call('/v1/api/keywords?site=example.com', { method: 'HEAD' });
      assert.equal(got.status, 200);
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('etag'), got.headers.get('etag'));
      assert.equal(head.text, '');
    } finally {
      await served.close();
    }
  });

  it('answers OPTIONS on the four routes with Allow and no CORS fields, before authentication', async () => {
    for (const path of ROUTE_PATHS) {
      const answer = await app.call(path, { method: 'OPTIONS', headers: { origin: 'https://elsewhere.example' } });
      assert.equal(answer.status, 200, path);
      assert.deepEqual(answer.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD']);
      assert.equal(answer.headers.get('access-control-allow-origin'), null);
    }
    assert.equal(authentications, 0);
  });

  it('gives each route one path: a trailing slash or another case is 404 for every method, with or without a key', async () => {
    const aliases = [
      '/v1/api/rankings/',
      '/V1/API/Rankings',
      '/v1/api/AI-VISIBILITY/summary/',
      '/v1/api/keywords/',
      '/V1/API/KEYWORDS',
      '/v1/api/Audit-Issues',
      '/HEALTHZ',
      '/readyz/',
      '/Metrics',
      '/docs/',
      '/DOCS',
      '/v1/openapi.json/',
      '/V1/OpenAPI.json',
    ];
    for (const path of aliases) {
      for (const method of ['GET', 'HEAD', 'POST', 'OPTIONS']) {
        for (const key of [null, 'key-org-a']) {
          const answer = await app.call(`${path}?site=example.com`, { key, method });
          assert.equal(answer.status, 404, `${method} ${path} with ${String(key)}`);
          assert.equal(answer.headers.get('allow'), null, `${method} ${path}`);
          if (method !== 'HEAD') assertSafeFailure(answer, 'NOT_FOUND');
        }
      }
    }
    assert.equal(authentications, 0);
  });

  it('says the same Allow in OPTIONS and in 405, on every path', async () => {
    for (const path of [...ROUTE_PATHS, '/healthz', '/readyz', '/metrics', '/docs', '/v1/openapi.json']) {
      const options = await app.call(path, { method: 'OPTIONS' });
      const refused = await app.call(path, { method: 'DELETE' });
      assert.equal(options.status, 200, path);
      assert.equal(refused.status, 405, path);
      assert.equal(options.headers.get('allow'), 'GET, HEAD', `OPTIONS ${path}`);
      assert.equal(refused.headers.get('allow'), 'GET, HEAD', `DELETE ${path}`);
    }
  });

  it('still authenticates GET on the routes (the 401 comes from the seam)', async () => {
    const answer = await app.call('/v1/api/rankings?site=example.com', { key: null });
    assert.equal(answer.status, 401);
    assertSafeFailure(answer, 'UNAUTHORIZED');
    assert.equal(authentications, 1);
  });
});
