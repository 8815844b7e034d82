import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { CallTimeoutError, createNodeHttpFetch } from '../../src/upstream/nodeHttpFetch.js';
import { listen } from '../support/http.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

describe('node:http fetch for platform calls', () => {
  let handler: Handler;
  let server: Awaited<ReturnType<typeof listen>>;
  const fetchOverHttp = createNodeHttpFetch();

  before(async () => {
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
  });

  it('sends the method, headers and body, and returns status, headers and body', async () => {
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
    assert.equal(res.ok, false);
    assert.equal(res.headers.get('retry-after'), '7');
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(await res.text(), '{"errors":[{"message":"slow down"}]}');
  });

  it('takes the headers graphql-request gives as a Headers, and the URL it has parsed', async () => {
    let seen: { authorization?: string; accept?: string } = {};
    handler = (req, _body, res) => {
      seen = { authorization: req.headers.authorization, accept: req.headers.accept };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":{}}');
    };
    const res = await fetchOverHttp(new URL(`${server.url}/graphql`), {
      method: 'POST',
      headers: new Headers({ Authorization: 'Bearer token-2', Accept: 'application/json' }),
      body: '{}',
    });
    assert.equal(res.ok, true);
    assert.deepEqual(seen, { authorization: 'Bearer token-2', accept: 'application/json' });
  });

  for (const [encoding, encode] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const) {
    it(`decodes a ${encoding} answer, as fetch did`, async () => {
      const text = `{"data":{"text":"${'é'.repeat(40_000)}"}}`; // several chunks, a multi-byte character across them
      handler = (_req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
        res.end(encode(text));
      };
      const res = await fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' });
      assert.equal(res.headers.get('content-encoding'), null);
      assert.equal(res.headers.get('content-length'), null);
      assert.equal(await res.text(), text);
    });
  }

  it('rejects a compressed answer that does not decode', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end('not gzip at all');
    };
    await assert.rejects(fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' }), (err: unknown) => {
      assert.equal((err as { code?: unknown }).code, 'Z_DATA_ERROR');
      return true;
    });
  });

  it('rejects an answer whose connection drops before the body ends', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":', () => res.destroy());
    };
    await assert.rejects(fetchOverHttp(`${server.url}/graphql`, { method: 'POST', body: '{}' }), (err: unknown) => {
      assert.ok(err instanceof Error && !(err instanceof CallTimeoutError), String(err));
      return true;
    });
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

  it('ends a call with no answer at its deadline, with CallTimeoutError', async () => {
    handler = () => undefined; // never answers
    const impatient = createNodeHttpFetch({ timeoutMs: 30 });
    await assert.rejects(impatient(`${server.url}/graphql`, { method: 'POST', body: '{}' }), CallTimeoutError);
  });

  it('ends a call whose body stalls at its deadline, with CallTimeoutError rather than the dropped socket', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":'); // and nothing more
    };
    const impatient = createNodeHttpFetch({ timeoutMs: 30 });
    await assert.rejects(impatient(`${server.url}/graphql`, { method: 'POST', body: '{}' }), (err: unknown) => {
      assert.ok(err instanceof CallTimeoutError);
      assert.equal(err.name, 'TimeoutError');
      return true;
    });
  });

  it('answers a call that ends before its deadline', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"data":{}}');
    };
    const fetchWithDeadline = createNodeHttpFetch({ timeoutMs: 5000 });
    const res = await fetchWithDeadline(`${server.url}/graphql`, { method: 'POST', body: '{}' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), '{"data":{}}');
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
