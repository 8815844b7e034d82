import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A server that counts, on its side, the connections and requests open at once, the requests it received and
 * the connections still open that carried one (undici may open a connection in place of an aborted call's,
 * nodejs/undici#5845, which carries nothing until the gateway closes it: counted in `connections` alone).
 */
export async function countingServer(answer: (req: IncomingMessage, res: ServerResponse) => void) {
  const counts = { connections: 0, maxConnections: 0, requests: 0, maxRequests: 0, received: 0, used: 0 };
  const used = new WeakSet<Socket>();
  const server = createServer((req, res) => {
    counts.received += 1;
    if (!used.has(req.socket)) {
      used.add(req.socket);
      counts.used += 1;
      req.socket.once('close', () => {
        counts.used -= 1;
      });
    }
    counts.requests += 1;
    counts.maxRequests = Math.max(counts.maxRequests, counts.requests);
    res.once('close', () => {
      counts.requests -= 1;
    });
    answer(req, res);
  });
  server.on('connection', (socket: Socket) => {
    counts.connections += 1;
    counts.maxConnections = Math.max(counts.maxConnections, counts.connections);
    socket.once('close', () => {
      counts.connections -= 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Headers and the start of a body at once, then one byte every 200 ms for as long as the client reads. */
export function trickle(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': '10000' });
  res.write('{"data":');
  const timer = setInterval(() => res.write(' '), 200);
  res.once('close', () => clearInterval(timer));
}
