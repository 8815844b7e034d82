import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import nock from 'nock';
import { createNodeHttpFetch } from '../../src/platform/nodeHttpFetch.js';
import { listen } from '../support/http.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe('node:http fetch for platform calls', () => {
  let handler: Handler;
  let server: Awaited<ReturnType<typeof listen>>;
  const fetchOverHttp = createNodeHttpFetch();

  before(async () => {
    nock.disableNetConnect();
    nock.enableNetConnect('127.0.0.1');
    server = await listen({
      callback: () => (req: IncomingMessage, res: ServerResponse) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
      },
    });
  });
  after(async () => {
    await server.close();
    nock.enableNetConnect();
  });

  it('sends the method, headers and body, and returns status, headers and body as a Response', async () => {
    let seen: { method?: string; authorization?: string; encoding?: string; body?: string } = {};
    handler = (req, body, res) => {
      seen = { method: req.method, authorization: req.headers.authorization, encoding: req.headers['accept-encoding'], body };
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end('{"errors":[{"message":"slow down"}]}');
    };
    const res = await fetchOverHttp(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: 'Bearer token-1', 'content-type': 'application/json' },
      body: '{"query":"{ __typename }"}',
    });
    assert.deepEqual(seen, { method: 'POST', authorization: 'Bearer token-1', encoding: 'gzip, deflate, br', body: '{"query":"{ __typename }"}' });
    assert.equal(res.status, 429);
    assert.equal(res.headers.get('retry-after'), '7');
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(await res.text(), '{"errors":[{"message":"slow down"}]}');
  });

  it('decodes a gzip answer, as fetch did', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(gzipSync('{"data":{"ok":true}}'));
    };
    const res = await fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' });
    assert.equal(res.headers.get('content-encoding'), null);
    assert.deepEqual(await res.json(), { data: { ok: true } });
  });

  it('reports a redirect as it is instead of following it, and a 204 without a body', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(307, { location: '/elsewhere' });
      res.end();
    };
    assert.equal((await fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' })).status, 307);
    handler = (_req, _body, res) => {
      res.writeHead(204);
      res.end();
    };
    const empty = await fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' });
    assert.equal(empty.status, 204);
    assert.equal(await empty.text(), '');
  });

  it('ends a call with no answer when the caller aborts it', async () => {
    handler = () => undefined; // never answers
    const controller = new AbortController();
    const call = fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}', signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(call, (err: unknown) => err instanceof Error && err.name === 'AbortError');
  });

  it('rejects with the socket error code when nothing listens', async () => {
    const refused = await listen({ callback: () => () => undefined });
    const url = refused.url;
    await refused.close();
    await assert.rejects(fetchOverHttp(`${url}/graphql`, { method: 'POST', body: '{}' }), (err: unknown) => {
      assert.equal((err as { code?: unknown }).code, 'ECONNREFUSED');
      return true;
    });
  });
});
