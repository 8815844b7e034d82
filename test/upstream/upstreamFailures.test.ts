import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { UpstreamError, type UpstreamFailure, type UpstreamName } from '../../src/errors.js';
import { AiVisibilityDocument } from '../../src/generated/graphql.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { listen } from '../support/http.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const failed = (upstream: UpstreamName, failure: UpstreamFailure) => (err: unknown) => {
  assert.ok(err instanceof UpstreamError, String(err));
  assert.deepEqual([err.upstream, err.failure], [upstream, failure], err.detail);
  return true;
};

/**
 * Both clients over real loopback HTTP (undici itself, no nock): each kind of failure an
 * upstream can cause becomes the same UpstreamError failure for either upstream.
 */
describe('upstream failures, classified alike for both upstreams', () => {
  let handler: Handler;
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    server = await listen({
      callback: () => (req: IncomingMessage, res: ServerResponse) => req.resume().on('end', () => handler(req, res)),
    });
  });
  after(() => server.close());

  const platform = () => createPlatformClient({ url: `${server.url}/graphql`, token: 't', timeoutMs: 200 });
  const keyService = () => createKeyServiceClient({ url: server.url, token: 't', timeoutMs: 200 });
  const callBoth = (): Array<[UpstreamName, Promise<unknown>]> => [
    ['platform', platform().request(AiVisibilityDocument, { organizationId: 'org_a', site: 'example.com' })],
    ['key-service', keyService().verify('a'.repeat(64))],
  ];

  const cases: Array<[string, Handler, UpstreamFailure]> = [
    ['no answer within the timeout', () => undefined, 'timeout'],
    [
      'a body that stalls past the timeout',
      (_req, res) => res.writeHead(200, { 'content-length': '100' }).write('{"da'),
      'timeout',
    ],
    ['a connection reset before any answer', (req) => req.socket.destroy(), 'unreachable'],
    [
      'a 500',
      (_req, res) => res.writeHead(500, { 'content-type': 'application/json' }).end('{"errors":[{"message":"boom"}]}'),
      'bad_answer',
    ],
    [
      'malformed JSON',
      (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data": {'),
      'bad_answer',
    ],
    [
      'a redirect (not followed)',
      (_req, res) => res.writeHead(307, { location: 'http://127.0.0.1:1/elsewhere' }).end(),
      'bad_answer',
    ],
    [
      'a gzip body that does not decode',
      (_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' }).end('nope'),
      'bad_answer',
    ],
    ['a 429', (_req, res) => res.writeHead(429, { 'retry-after': '3' }).end(), 'throttled'],
  ];
  for (const [what, reply, failure] of cases) {
    it(`${what} → ${failure}`, async () => {
      handler = reply;
      await Promise.all(callBoth().map(([upstream, call]) => assert.rejects(call, failed(upstream, failure))));
    });
  }

  it('reads a gzip answer of the key service as any other', async () => {
    handler = (_req, res) =>
      res
        .writeHead(404, { 'content-type': 'application/json', 'content-encoding': 'gzip' })
        .end(gzipSync('{"error":"unknown_key"}'));
    assert.equal(await keyService().verify('a'.repeat(64)), null);
  });
});
