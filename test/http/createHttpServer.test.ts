import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createHttpServer, HTTP_SERVER_DEFAULTS } from '../../src/http/createHttpServer.js';
import { createGatewayMetrics } from '../../src/metrics/gatewayMetrics.js';
import { fakeServices } from '../support/fakeServices.js';
import { listenHardened, rawExchange } from './listenHardened.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Envelope {
  data: null;
  meta: { requestId?: string };
  errors: Array<{ code: string; message: string }>;
}

/** Status, lower-cased headers and JSON body of a raw HTTP/1.1 answer. */
function parseRaw(raw: string): { status: number; headers: Map<string, string>; body: Envelope } {
  const split = raw.indexOf('\r\n\r\n');
  const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
  const headers = new Map(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(raw.slice(split + 4)) as Envelope };
}

describe('createHttpServer', () => {
  it('sets Node timeouts so slow clients cannot hold sockets', () => {
    const server = createHttpServer(createApp(fakeServices()));
    assert.equal(server.headersTimeout, HTTP_SERVER_DEFAULTS.headersTimeoutMs);
    assert.equal(server.requestTimeout, HTTP_SERVER_DEFAULTS.requestTimeoutMs);
    assert.equal(server.keepAliveTimeout, HTTP_SERVER_DEFAULTS.keepAliveTimeoutMs);
    assert.ok(server.headersTimeout <= 10_000 && server.requestTimeout <= 30_000);
    // Longer than the 60 s idle timeout of common load balancers, so they close first.
    assert.ok(server.keepAliveTimeout > 60_000);
    server.close();
  });

  describe('on a live server', () => {
    const logged: string[] = [];
    const metrics = createGatewayMetrics();
    let server: Awaited<ReturnType<typeof listenHardened>>;

    before(async () => {
      const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(line) });
      server = await listenHardened(createApp(fakeServices({ logger, metrics })), {
        logger,
        metrics,
        headersTimeoutMs: 300,
        requestTimeoutMs: 300,
        timeoutCheckIntervalMs: 100,
      });
    });
    after(() => server.close());

    it('passes ordinary requests to the app', async () => {
      const res = await fetch(`${server.url}/healthz`);
      assert.equal(res.status, 200);
      assert.deepEqual(await res.json(), { status: 'ok' });
    });

    it('answers a URL over 8 KiB with 414 in the envelope, keeping a well-formed request id', async () => {
      const res = await fetch(`${server.url}/v1/api/keywords?site=${'a'.repeat(9000)}`, {
        headers: { 'x-request-id': 'long-1' },
      });
      assert.equal(res.status, 414);
      assert.equal(res.headers.get('x-request-id'), 'long-1');
      const body = (await res.json()) as Envelope;
      assert.deepEqual(body, {
        data: null,
        meta: { requestId: 'long-1' },
        errors: [{ code: 'URI_TOO_LONG', message: 'The request URL is too long.', reason: 'uri_too_long' }],
      });
      assert.ok(!logged.join('').includes('a'.repeat(100)), 'the URL is not logged');
      assert.match(logged.join(''), /"status":414/);
    });

    it('answers a URL beyond the header limit with 414 too (parser level)', async () => {
      const raw = await rawExchange(
        server.port,
        `GET /v1/api/keywords?site=${'b'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
      );
      const answer = parseRaw(raw);
      assert.equal(answer.status, 414);
      assert.equal(answer.body.errors[0]?.code, 'URI_TOO_LONG');
      assert.match(answer.headers.get('x-request-id') ?? '', UUID);
      assert.equal(answer.body.meta.requestId, answer.headers.get('x-request-id'));
      assert.equal(Number(answer.headers.get('content-length')), Buffer.byteLength(JSON.stringify(answer.body)));
    });

    it('answers oversized headers with 431 in the envelope, one big header or many', async () => {
      const oneBig = `X-Big: ${'c'.repeat(20_000)}\r\n`;
      const many = Array.from({ length: 200 }, (_, i) => `X-H${i}: ${'d'.repeat(100)}\r\n`).join('');
      for (const headers of [oneBig, many]) {
        const answer = parseRaw(await rawExchange(server.port, `GET /healthz HTTP/1.1\r\nHost: x\r\n${headers}\r\n`));
        assert.equal(answer.status, 431);
        assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
        assert.deepEqual(answer.body.errors, [
          { code: 'HEADERS_TOO_LARGE', message: 'The request headers are too large.', reason: 'headers_too_large' },
        ]);
        assert.match(answer.body.meta.requestId ?? '', UUID);
      }
    });

    it('answers an unreadable request with 400 in the envelope', async () => {
      const answer = parseRaw(await rawExchange(server.port, 'NOT HTTP AT ALL\r\n\r\n'));
      assert.equal(answer.status, 400);
      assert.equal(answer.body.errors[0]?.code, 'BAD_REQUEST');
    });

    it('answers 408 in the envelope and hangs up on a client that never finishes its headers', async () => {
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1', () =>
          socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '),
        );
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
      });
      assert.match(raw, /^HTTP\/1\.1 408 /);
      const answer = parseRaw(raw);
      assert.equal(answer.status, 408);
      assert.equal(answer.body.errors[0]?.code, 'REQUEST_TIMEOUT');
      assert.equal(answer.body.data, null);
    });

    it('keeps an idle keep-alive connection open past the slow-client limits, and serves on it', async () => {
      // The header and request limits (300 ms here) count from a request's first byte:
      // a connection idle four times as long between two requests still answers the second.
      const answers = await new Promise<string[]>((resolve, reject) => {
        const seen: string[] = [];
        const socket = connect(server.port, '127.0.0.1', () =>
          socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'),
        );
        socket.on('data', (chunk: Buffer) => {
          seen.push(chunk.toString('latin1').split('\r\n')[0] ?? '');
          if (seen.length === 1)
            setTimeout(() => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 1200);
        });
        socket.on('error', reject);
        socket.on('close', () => resolve(seen));
      });
      assert.deepEqual(answers, ['HTTP/1.1 200 OK', 'HTTP/1.1 200 OK']);
    });

    it('counts rejected requests in the metrics', async () => {
      const text = (await metrics.exposition()).text;
      const count = 'http_server_request_duration_seconds_count';
      assert.match(
        text,
        new RegExp(`${count}\\{http_route="rejected",http_request_method="GET",http_response_status_code="414"\\} 1`),
      );
      assert.match(
        text,
        new RegExp(
          `${count}\\{http_route="rejected",http_request_method="unknown",http_response_status_code="431"\\} [1-9]`,
        ),
      );
    });
  });
});
