import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { createApp } from '../../src/app.js';
import { createHttpServer } from '../../src/http/createHttpServer.js';
import { fakeServices, PLATFORM_URL } from '../support/fakeServices.js';
import { testKey } from '../support/keys.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
}

function call(port: number, method: string, path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('headers on every answer', () => {
  let server: Server;
  let port: number;

  before(async () => {
    server = createHttpServer(createApp(fakeServices()));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('errors: nosniff, no-store, and Vary where the answer depends on the caller', async () => {
    nock(new URL(PLATFORM_URL).origin)
      .post('/graphql')
      .reply(200, { data: { organization: { siteLookup: [] } } });
    const bearer = { authorization: 'Bearer key-org-a' };
    const cases: Array<[string, string, Record<string, string>, number, boolean]> = [
      ['GET', '/v1/api/keywords?site=example.com', {}, 401, true],
      ['GET', '/v1/api/keywords?site=example.com', { authorization: 'Bearer nope' }, 401, true],
      ['GET', '/v1/api/keywords', bearer, 400, true],
      ['GET', '/v1/api/keywords?site=unknown.example', bearer, 404, true],
      ['GET', `/v1/api/keywords?site=example.com&k=${testKey('headers')}`, bearer, 401, false],
      ['GET', '/v1/nowhere', {}, 404, false],
      ['POST', '/v1/api/keywords', {}, 405, false],
      ['GET', `/v1/api/keywords?site=${'x'.repeat(9000)}`, {}, 414, false],
    ];
    for (const [method, path, headers, status, dependsOnCaller] of cases) {
      const answer = await call(port, method, path, headers);
      const label = `${method} ${path.slice(0, 60)}`;
      assert.equal(answer.status, status, label);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff', label);
      assert.equal(answer.headers['cache-control'], 'no-store', label);
      if (dependsOnCaller) assert.equal(answer.headers.vary, 'Authorization, X-API-Key', label);
    }
  });

  it('successes: nosniff, and their own caching headers', async () => {
    for (const path of ['/healthz', '/v1/openapi.json']) {
      const answer = await call(port, 'GET', path);
      assert.equal(answer.status, 200, path);
      assert.equal(answer.headers['x-content-type-options'], 'nosniff', path);
      assert.notEqual(answer.headers['cache-control'], 'no-store', path);
    }
  });
});
