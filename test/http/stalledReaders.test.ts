import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { createHttpServer, type HttpServerOptions } from '../../src/http/createHttpServer.js';

/** An app whose every answer is 1 MB: twenty of them fill any socket buffer a client leaves unread. */
const bigAnswers = {
  callback: () => (_req: IncomingMessage, res: ServerResponse) => res.end(Buffer.alloc(1_000_000, 'a')),
};

/** Pipelines twenty requests and never reads; resolves with the server's open connections after `waitMs`. */
async function openAfterUnreadPipeline(options: HttpServerOptions, waitMs: number): Promise<number> {
  const server = createHttpServer(bigAnswers, options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  let socket: Socket | undefined;
  try {
    socket = connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
    socket.on('error', () => {});
    socket.pause(); // never reads an answer
    socket.write('GET / HTTP/1.1\r\nHost: gateway\r\n\r\n'.repeat(20));
    await new Promise((resolve) => server.once('connection', resolve));
    const openNow = () => new Promise<number>((resolve) => server.getConnections((_err, count) => resolve(count)));
    const until = Date.now() + waitMs;
    let open = await openNow();
    while (open > 0 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      open = await openNow();
    }
    return open;
  } finally {
    socket?.destroy();
    server.closeAllConnections();
    server.close();
  }
}

describe('a pipelining client that reads none of its answers', () => {
  it('has its connection closed once its answers have not moved for stallTimeoutMs', async () => {
    assert.equal(await openAfterUnreadPipeline({ stallTimeoutMs: 300 }, 10_000), 0);
  });

  it('keeps it open for the default limit, far longer', async () => {
    assert.equal(await openAfterUnreadPipeline({}, 1_500), 1);
  });
});
