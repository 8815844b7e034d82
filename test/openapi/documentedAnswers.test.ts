import assert from 'node:assert/strict';
import { createServer, get, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { request } from 'undici';
import { checkAnswer, takeProblems } from '../support/documentedAnswers.js';

/**
 * The root hook that checks every answer against the document catches drift whichever
 * client received it: a stand-in server gives a documented path a wrong answer (a 200
 * whose body is no envelope and which lacks every required header), and each client's
 * answer must be reported once.
 */
describe('the documented-answers hook', () => {
  const PATH = '/v1/api/keywords?site=example.com';
  let server: Server;
  let origin: string;
  let port: number;

  before(async () => {
    server = createServer((req, res) => {
      if (req.url?.startsWith('/healthz')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"wrong":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    origin = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  afterEach(() => {
    // Whatever a test left unread is not the next test's.
    takeProblems();
  });

  const reportedOnce = (found: string[]) => {
    assert.equal(found.length, 1, found.join('\n'));
    assert.match(found[0] ?? '', /^GET \/v1\/api\/keywords\?site=example\.com → 200: .*required header X-Request-Id/);
    assert.match(found[0] ?? '', /body: /);
  };

  it('reports a drifting answer received through fetch', async () => {
    const res = await fetch(`${origin}${PATH}`);
    await res.text();
    reportedOnce(takeProblems());
  });

  it('reports a drifting answer received through undici request', async () => {
    const res = await request(`${origin}${PATH}`);
    await res.body.text();
    reportedOnce(takeProblems());
  });

  it('reports a drifting answer received through node:http', async () => {
    await new Promise<void>((resolve, reject) => {
      get(`${origin}${PATH}`, (res) => {
        res.resume();
        res.on('end', resolve);
      }).on('error', reject);
    });
    reportedOnce(takeProblems());
  });

  it('reports each drifting answer read off a raw socket, pipelined, and none of a path not documented', async () => {
    const ask = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () =>
        socket.end(`${ask('/healthz')}${ask(PATH)}${ask('/healthz')}${ask(PATH)}`),
      );
      socket.resume();
      socket.on('error', reject);
      socket.on('close', () => resolve());
    });
    const found = takeProblems();
    assert.equal(found.length, 2, found.join('\n'));
    reportedOnce(found.slice(1));
  });

  it('reports nothing of a socket that was sent no request, nor of a HEAD answer', async () => {
    assert.deepEqual(checkAnswer('HEAD', PATH, { status: 200, headers: new Headers(), body: '' }), []);
    await new Promise<void>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.end('NOT HTTP AT ALL\r\n\r\n'));
      socket.resume();
      socket.on('error', () => {});
      socket.on('close', () => resolve());
    });
    assert.deepEqual(takeProblems(), []);
  });

  it('finds a conforming answer conforming', () => {
    const requestId = 'r-1';
    const body = JSON.stringify({
      data: null,
      meta: { requestId },
      errors: [{ code: 'UNAUTHORIZED', message: 'A valid API key is required.', reason: 'missing_key' }],
    });
    const headers = new Headers({
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': requestId,
      'www-authenticate': 'Bearer',
    });
    assert.deepEqual(checkAnswer('GET', PATH, { status: 401, headers, body }), []);
    assert.deepEqual(takeProblems(), []);
  });
});
