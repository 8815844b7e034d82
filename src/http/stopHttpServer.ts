import type { Server } from 'node:http';

/**
 * Stops taking connections, lets requests in flight finish, and closes idle
 * keep-alive connections at once; whatever is still open after `graceMs` is cut.
 * Resolves when the server has closed. For main.ts's SIGTERM/SIGINT path, before
 * the usage flush.
 */
export function stopHttpServer(server: Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const force = setTimeout(() => server.closeAllConnections(), graceMs);
    force.unref();
    server.close((err) => {
      clearTimeout(force);
      // Already closed is as good as closed.
      if (err && (err as NodeJS.ErrnoException).code !== 'ERR_SERVER_NOT_RUNNING') reject(err);
      else resolve();
    });
    server.closeIdleConnections();
  });
}
