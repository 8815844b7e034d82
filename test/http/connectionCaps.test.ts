import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { createApp } from '../../src/app.js';
import type { HttpServerOptions } from '../../src/http/createHttpServer.js';
import { fakeServices } from '../support/fakeServices.js';
import { listenHardened } from './listenHardened.js';

/**
 * One client must not hold every connection slot: a cap per client address (the peer's, or
 * behind proxies the one X-Forwarded-For names), and idle keep-alive connections closed for
 * newcomers when the instance nears MAX_CONNECTIONS. Real sockets on loopback: 127.0.0.2 is
 * another client than 127.0.0.1.
 */

interface Client {
  readonly socket: Socket;
  /** Resolves true once the server closed the connection, false while it is open after `withinMs`. */
  closedWithin(withinMs: number): Promise<boolean>;
  /** Sends one complete request and resolves with the answer's status line. */
  ask(headers?: string): Promise<string>;
}

async function openClient(port: number, from = '127.0.0.1'): Promise<Client> {
  const socket = connect({ port, host: '127.0.0.1', localAddress: from });
  socket.on('error', () => {});
  let closed = false;
  socket.once('close', () => (closed = true));
  await new Promise<void>((resolve) => {
    socket.once('connect', resolve);
    socket.once('close', resolve);
  });
  return {
    socket,
    closedWithin: (withinMs) =>
      new Promise<boolean>((resolve) => {
        if (closed) return resolve(true);
        const timer = setTimeout(() => resolve(false), withinMs);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve(true);
        });
      }),
    ask: (headers = '') =>
      new Promise<string>((resolve) => {
        if (closed) return resolve('closed');
        socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1').split('\r\n')[0] ?? ''));
        socket.once('close', () => resolve('closed'));
        socket.write(`GET /healthz HTTP/1.1\r\nHost: gateway\r\n${headers}\r\n`);
      }),
  };
}

describe('connections per client (MAX_CONNECTIONS_PER_CLIENT)', () => {
  let server: Awaited<ReturnType<typeof listenHardened>> | undefined;
  const clients: Client[] = [];
  const serve = async (options: HttpServerOptions) => {
    server = await listenHardened(createApp(fakeServices()), options);
    return server.port;
  };
  afterEach(async () => {
    for (const client of clients.splice(0)) client.socket.destroy();
    await server?.close();
    server = undefined;
  });

  it('closes a client’s connection beyond its cap at once; another client is served', async () => {
    const port = await serve({ maxConnectionsPerClient: 3 });
    for (let i = 0; i < 3; i++) clients.push(await openClient(port));
    const fourth = await openClient(port);
    clients.push(fourth);
    assert.equal(await fourth.closedWithin(2_000), true, 'the fourth from one address is closed');
    for (const client of clients.slice(0, 3)) assert.equal(await client.ask(), 'HTTP/1.1 200 OK');
    const other = await openClient(port, '127.0.0.2');
    clients.push(other);
    assert.equal(await other.ask(), 'HTTP/1.1 200 OK');
    // A closed connection gives its place back (once the server has seen it close).
    clients[0]?.socket.destroy();
    let answer = 'closed';
    for (let attempt = 0; attempt < 40 && answer === 'closed'; attempt++) {
      const again = await openClient(port);
      clients.push(again);
      answer = await again.ask();
    }
    assert.equal(answer, 'HTTP/1.1 200 OK');
  });

  it('behind a proxy, counts by the address X-Forwarded-For names, not the proxy’s', async () => {
    const port = await serve({ maxConnectionsPerClient: 2, trustedProxyHops: 1 });
    const from = (address: string) => `X-Forwarded-For: ${address}\r\n`;
    for (let i = 0; i < 2; i++) {
      const client = await openClient(port);
      clients.push(client);
      assert.equal(await client.ask(from('203.0.113.7')), 'HTTP/1.1 200 OK');
    }
    const third = await openClient(port);
    clients.push(third);
    assert.equal(await third.ask(from('203.0.113.7')), 'closed', 'a third connection of one client is closed');
    const neighbour = await openClient(port);
    clients.push(neighbour);
    assert.equal(await neighbour.ask(from('203.0.113.8')), 'HTTP/1.1 200 OK', 'another client behind the same proxy');
  });
});

describe('idle keep-alive connections near MAX_CONNECTIONS', () => {
  let server: Awaited<ReturnType<typeof listenHardened>>;
  const clients: Client[] = [];
  before(async () => {
    server = await listenHardened(createApp(fakeServices()), { maxConnections: 10, maxConnectionsPerClient: 10 });
  });
  after(async () => {
    for (const client of clients) client.socket.destroy();
    await server.close();
  });

  it('closes idle ones first, so a newcomer is served while busy ones are kept', async () => {
    // One client: five connections mid-request (busy), then idle keep-alive ones up to the cap.
    for (let i = 0; i < 5; i++) {
      const busy = await openClient(server.port);
      busy.socket.write('GET /healthz HTTP/1.1\r\nHost: gateway\r\n');
      clients.push(busy);
    }
    const idle: Client[] = [];
    for (let i = 0; i < 5; i++) {
      const client = await openClient(server.port);
      clients.push(client);
      idle.push(client);
      assert.match(await client.ask(), /^HTTP\/1.1 200|^closed$/);
    }
    const newcomer = await openClient(server.port, '127.0.0.2');
    clients.push(newcomer);
    assert.equal(await newcomer.ask(), 'HTTP/1.1 200 OK');
    const idleClosed = await Promise.all(idle.map((client) => client.closedWithin(1_000)));
    assert.ok(idleClosed.filter(Boolean).length >= 1, 'idle keep-alive connections were closed for newcomers');
    const busyClosed = await Promise.all(clients.slice(0, 5).map((client) => client.closedWithin(100)));
    assert.deepEqual(busyClosed, Array(5).fill(false), 'connections mid-request are kept');
  });
});
