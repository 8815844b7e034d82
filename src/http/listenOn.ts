import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on host:port (0: a free one) and resolves with the base URL that reaches the server (a
 * wildcard address over loopback); rejects when the port cannot be taken.
 */
export async function listenOn(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const shownHost = wildcard ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}
