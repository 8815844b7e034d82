import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import {
  answerMemory,
  type BareServersReady,
  CALIBRATION_WORK_MICROS,
  isParentMessage,
  reportFailure,
} from './childMessages.js';

/**
 * Bench child: the two baselines the gateway cannot beat, serving the very bytes and
 * content type of the gateway's keywords answer: a bare node:http handler, and a bare
 * Koa app with one middleware. They wait for the parent's `serve` message (the bytes
 * are fetched from the gateway first), then listen on free loopback ports.
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

async function serve(body: string, contentType: string): Promise<BareServersReady> {
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
  const [nodeUrl, koaUrl] = await Promise.all([listen(nodeServer), listen(koaServer)]);
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
  return { type: 'ready', nodeUrl, koaUrl, koaWithWorkUrls };
}

process.on('message', (message: unknown) => {
  if (!isParentMessage(message)) return;
  if (message.type === 'serve')
    serve(message.body, message.contentType).then((ready) => process.send?.(ready), reportFailure);
  else if (message.type === 'stop') process.exit(0);
  else answerMemory(message);
});
process.on('disconnect', () => process.exit(0));
