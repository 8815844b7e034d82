import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';

/** Serves a Koa app on a free loopback port for real HTTP requests from tests. */
export async function listen(
  app: Koa<never> | Koa<object> | { callback(): Parameters<typeof createServer>[1] },
): Promise<{
  url: string;
  close(): Promise<void>;
}> {
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
