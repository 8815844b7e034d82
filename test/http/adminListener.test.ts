import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import { createAdminApp, createApp } from '../../src/app.js';
import { createHttpServer } from '../../src/http/createHttpServer.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

describe('admin listener (ADMIN_PORT)', () => {
  let publicServer: Awaited<ReturnType<typeof listen>>;
  let adminServer: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const services = fakeServices({ watchOnAdminPort: true });
    publicServer = await listen(createApp(services));
    adminServer = await listen(createAdminApp(services));
  });
  after(async () => {
    await Promise.all([publicServer.close(), adminServer.close()]);
  });

  it('serves health, metrics and readiness on its own port only', async () => {
    for (const path of ['/healthz', '/metrics', '/readyz']) {
      const onPublic = await fetch(`${publicServer.url}${path}`);
      assert.equal(onPublic.status, 404, `public ${path}`);
      await onPublic.arrayBuffer();
      const onAdmin = await fetch(`${adminServer.url}${path}`);
      assert.equal(onAdmin.status, 200, `admin ${path}`);
      await onAdmin.arrayBuffer();
    }
    const docs = await fetch(`${publicServer.url}/v1/openapi.json`);
    assert.equal(docs.status, 200, 'the public port still describes itself');
    await docs.arrayBuffer();
    const route = await fetch(`${adminServer.url}/v1/api/keywords?site=example.com`);
    assert.equal(route.status, 404, 'the admin port serves no data');
    await route.arrayBuffer();
  });
});

describe('connection cap (MAX_CONNECTIONS)', () => {
  it('closes connections beyond the cap at once and keeps those within it', async () => {
    const server = createHttpServer(createApp(fakeServices()), { maxConnections: 10 });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const sockets: Socket[] = [];
    try {
      // Each sends half a request and waits: none is idle, so none can be closed for a newcomer.
      const closed = await Promise.all(
        Array.from(
          { length: 60 },
          () =>
            new Promise<boolean>((resolve) => {
              const socket = connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
              sockets.push(socket);
              const timer = setTimeout(() => resolve(false), 2_000);
              socket.once('close', () => {
                clearTimeout(timer);
                resolve(true);
              });
              socket.once('error', () => {});
            }),
        ),
      );
      assert.equal(closed.filter((one) => !one).length, 10, 'ten kept');
    } finally {
      for (const socket of sockets) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
