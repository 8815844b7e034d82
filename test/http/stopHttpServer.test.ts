import assert from 'node:assert/strict';
import { request, Agent } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpServer } from '../../src/http/createHttpServer.js';
import { stopHttpServer } from '../../src/http/stopHttpServer.js';

describe('stopHttpServer', () => {
  it('lets a request in flight finish, closes idle keep-alive sockets at once, and refuses new connections', async () => {
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let arrived: () => void = () => {};
    const inFlight = new Promise<void>((resolve) => {
      arrived = resolve;
    });
    const app = {
      callback: () => (req: { url?: string }, res: { end(body: string): void }) => {
        if (req.url === '/slow') {
          arrived();
          void released.then(() => res.end('finished'));
        } else {
          res.end('quick');
        }
      },
    };
    // Long keep-alive and grace: stopping must not wait for either.
    const server = createHttpServer(app, { keepAliveTimeoutMs: 60_000 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new Agent({ keepAlive: true });
    const get = (path: string) =>
      new Promise<string>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(body));
        });
        req.on('error', reject);
        req.end();
      });

    try {
      assert.equal(await get('/quick'), 'quick'); // leaves an idle keep-alive socket
      const slow = get('/slow');
      await inFlight;
      const stopped = stopHttpServer(server, 60_000);
      await assert.rejects(
        new Promise((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port, path: '/quick', agent: false }, resolve);
          req.on('error', reject);
          req.end();
        }),
        (err: unknown) => (err as NodeJS.ErrnoException).code === 'ECONNREFUSED',
      );
      release();
      assert.equal(await slow, 'finished');
      await stopped;
      assert.equal(server.listening, false);
    } finally {
      agent.destroy();
      server.closeAllConnections();
    }
  });
});
