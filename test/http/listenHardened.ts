import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpServer, type HttpServerOptions } from '../../src/http/createHttpServer.js';

/** Serves an app through createHttpServer (as gateway.ts does) on a free loopback port. */
export async function listenHardened(
  app: { callback(): (req: IncomingMessage, res: ServerResponse) => void },
  options: HttpServerOptions = {},
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const server = createHttpServer(app, options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

/** Sends raw bytes and resolves with everything the server answered before closing. */
export async function rawExchange(port: number, request: string): Promise<string> {
  const { connect } = await import('node:net');
  return new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });
}
