import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

/**
 * With ADMIN_PORT unset, /metrics (cross-organization totals) answers only clients on this
 * machine; health and readiness stay open to probes from anywhere. Behind a trusted proxy the
 * client is the one X-Forwarded-For names, so a proxy on this machine does not open it to all.
 */
describe('metrics on the public port (ADMIN_PORT unset)', () => {
  const servers: Array<Awaited<ReturnType<typeof listen>>> = [];
  after(async () => {
    for (const server of servers) await server.close();
  });
  const serve = async (trustedProxyHops: number) => {
    const server = await listen(createApp(fakeServices({ trustedProxyHops })));
    servers.push(server);
    return server.url;
  };
  const get = async (url: string, forwardedFor?: string) => {
    const res = await fetch(url, { headers: forwardedFor ? { 'x-forwarded-for': forwardedFor } : {} });
    const text = await res.text();
    return { status: res.status, text };
  };

  it('answers a client on this machine', async () => {
    const url = await serve(0);
    const metrics = await get(`${url}/metrics`);
    assert.equal(metrics.status, 200);
    assert.match(metrics.text, /http_server_request_duration_seconds/);
    // Without trusted proxies, a forwarded address is the caller's own claim: the socket decides.
    assert.equal((await get(`${url}/metrics`, '203.0.113.5')).status, 200);
  });

  it('answers any other client 404, while /healthz and /readyz stay open', async () => {
    const url = await serve(1);
    const outsider = '203.0.113.5';
    const metrics = await get(`${url}/metrics`, outsider);
    assert.equal(metrics.status, 404);
    assert.doesNotMatch(metrics.text, /http_server|process_/);
    assert.equal((await get(`${url}/healthz`, outsider)).status, 200);
    assert.equal((await get(`${url}/readyz`, outsider)).status, 200);
    assert.equal((await get(`${url}/metrics`, '127.0.0.1')).status, 200, 'a scraper on this machine behind the proxy');
    assert.equal((await get(`${url}/metrics`, '::1')).status, 200);
    assert.equal((await get(`${url}/metrics`, '::ffff:127.0.0.1')).status, 200, 'IPv4-mapped loopback');
    assert.equal((await get(`${url}/metrics`, '127.evil.example')).status, 404, 'not an address at all');
    assert.equal((await get(`${url}/metrics`, '127.0.0.1, 198.51.100.7')).status, 404, 'the proxy wrote the last one');
  });
});
