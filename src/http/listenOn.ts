import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Listens on host:port (0: a free one) and resolves with the base URL that reaches the server (a
 * wildcard address over loopback).
 */
export async function listenOn(server: Server, host: string, port: number): Promise<string> {
  server.listen(port, host);
  await once(server, 'listening'); // rejects on 'error' (EADDRINUSE, EACCES)
  const address = server.address() as AddressInfo;
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  const shownHost = wildcard ? '127.0.0.1' : address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shownHost}:${address.port}`;
}
