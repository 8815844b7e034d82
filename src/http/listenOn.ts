import { once } from 'node:events';
import type { Server } from 'node:http';
import { type AddressInfo, createServer } from 'node:net';

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

/**
 * Binds each fixed port (0 is skipped) and lets it go at once, before anything else starts: a busy
 * port (an old instance still draining on it) then fails the start before Redis, the upstreams or
 * the usage spool are touched, with nothing to undo. The error is listen's own, naming the port.
 */
export async function checkCanListen(host: string, ports: readonly number[]): Promise<void> {
  for (const port of ports.filter((p) => p !== 0)) {
    const probe = createServer();
    probe.listen(port, host);
    await once(probe, 'listening');
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}
