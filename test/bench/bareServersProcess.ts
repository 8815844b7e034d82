import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { Agent, request } from 'undici';
import { PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { answerData } from '../../src/platform/platformClient.js';
import { PLATFORM_ANSWER_MAX_BYTES } from '../../src/upstream/answerSizes.js';
import { createUpstreamHttp } from '../../src/upstream/upstreamHttp.js';
import {
  answerMemory,
  type BareServersReady,
  CALIBRATION_WORK_MICROS,
  isParentMessage,
  type PlatformCall,
  reportFailure,
} from './childMessages.js';
import { sofaServer } from './sofaServer.js';

/**
 * Bench child: the two baselines the gateway cannot beat, serving the very bytes and
 * content type of the gateway's keywords answer: a bare node:http handler, and a bare
 * Koa app with one middleware; the calibration servers; and the bare proxy, the floor of
 * the cold path. They wait for the parent's `serve` message (the bytes are fetched from
 * the gateway first), then listen on free loopback ports.
 */
function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve(`http://127.0.0.1:${port}`);
    });
  });
}

/** Spins for `micros` µs: CPU spent the way a request's own work would spend it. */
function busyFor(micros: number): void {
  const until = performance.now() + micros / 1000;
  while (performance.now() < until) {
    // spin
  }
}

const PROXY_CONTENT_TYPE = 'application/json; charset=utf-8';

function answerText(res: ServerResponse, status: number, text: string): void {
  const bytes = Buffer.from(text);
  res.writeHead(status, { 'content-type': PROXY_CONTENT_TYPE, 'content-length': bytes.length });
  res.end(bytes);
}

/**
 * The bare proxy: for each request, the gateway's own platform call (same URL, headers and
 * body) through undici's request API, its body read as text and answered as is. Nothing else:
 * no auth, limiter, cache, log or mapping. A cache miss of any gateway of this shape costs at
 * least this on this machine: two HTTP exchanges, each write waking a process that waited.
 */
function bareProxy(call: PlatformCall): Server {
  // One keep-alive Agent for the life of the process: the connection to the platform stays
  // open between requests, as the gateway's does (it too goes through one undici Agent).
  const dispatcher = new Agent();
  return createServer((_req, res) => {
    request(call.url, { dispatcher, method: 'POST', headers: call.headers, body: call.body })
      .then(async ({ statusCode, body }) => {
        const text = await body.text();
        // Anything but a 200 is passed on as a 502, so that the bench reports it rather than measuring it.
        answerText(res, statusCode === 200 ? 200 : 502, text);
      })
      .catch((err: unknown) => answerText(res, 502, JSON.stringify({ error: String(err) })));
  });
}

/**
 * The stack's proxy: the same platform call made the way the gateway makes it (the same POST
 * through the gateway's undici transport, its data read as the platform client reads it),
 * answered by Koa as `{ data }`. Nothing else either: it is the floor of a cache miss on this
 * stack, where the bare proxy is the floor on any stack.
 */
function stackProxy(call: PlatformCall): Server {
  // UPSTREAM_TIMEOUT_MS's default: the bound of a call that never comes near it here.
  const http = createUpstreamHttp({
    timeoutMs: 5000,
    connections: PLATFORM_SHARES.inFlight,
    maxAnswerBytes: PLATFORM_ANSWER_MAX_BYTES,
  });
  const url = new URL(call.url);
  const app = new Koa();
  app.use(async (ctx) => {
    const answer = await http.send(url, { method: 'POST', headers: call.headers, body: call.body });
    ctx.body = { data: answerData(answer, 'Keywords') };
  });
  return createServer(app.callback());
}

async function serve(body: string, contentType: string, platformCall: PlatformCall): Promise<BareServersReady> {
  const bytes = Buffer.from(body);
  const nodeServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': bytes.length });
    res.end(bytes);
  });
  const koa = new Koa();
  koa.use((ctx) => {
    ctx.type = contentType;
    ctx.body = body;
  });
  const koaServer = createServer(koa.callback());
  const [nodeUrl, koaUrl, proxyUrl, stackProxyUrl, sofaUrl] = await Promise.all([
    listen(nodeServer),
    listen(koaServer),
    listen(bareProxy(platformCall)),
    listen(stackProxy(platformCall)),
    listen(sofaServer(platformCall)),
  ]);
  const koaWithWorkUrls: Record<number, string> = {};
  for (const micros of CALIBRATION_WORK_MICROS) {
    const app = new Koa();
    app.use((ctx) => {
      busyFor(micros);
      ctx.type = contentType;
      ctx.body = body;
    });
    koaWithWorkUrls[micros] = await listen(createServer(app.callback()));
  }
  return { type: 'ready', nodeUrl, koaUrl, koaWithWorkUrls, proxyUrl, stackProxyUrl, sofaUrl };
}

process.on('message', (message: unknown) => {
  if (!isParentMessage(message)) return;
  if (message.type === 'serve')
    serve(message.body, message.contentType, message.platformCall).then(
      (ready) => process.send?.(ready),
      reportFailure,
    );
  else if (message.type === 'stop') process.exit(0);
  else answerMemory(message);
});
process.on('disconnect', () => process.exit(0));
