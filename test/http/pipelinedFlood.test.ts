import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';

const CONNECTIONS = 12;
const REQUESTS_PER_CONNECTION = 20_000;
const PEAK_RSS_LIMIT_MB = 200;

/**
 * Twelve connections each write 20,000 pipelined requests without a key at once and never
 * read an answer: half ask a data route (refused), half the OpenAPI document (answered,
 * about 100 KB each). Node parses whatever it reads and hands every request on; the gateway
 * keeps a few in progress per connection and leaves the rest unread in the kernel, so its
 * memory stays bounded and paying callers on other connections are served meanwhile.
 */
describe('pipelined flood against the gateway process', function () {
  this.timeout(90_000);
  let gateway: GatewayChild;
  const sockets: Socket[] = [];

  before(async () => {
    gateway = await startGatewayChild({ MAX_CONNECTIONS_PER_CLIENT: '100' });
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await gateway.close();
  });

  it(`keeps peak RSS under ${PEAK_RSS_LIMIT_MB} MB and answers every paying request 200, nearly all within 1 s`, async () => {
    // The paying caller has been here before (its key verified, the code paths warm).
    assert.equal(await gateway.paying(), 200);
    const before = gateway.memoryMb();
    for (let index = 0; index < CONNECTIONS; index++) {
      const path = index % 2 === 0 ? '/v1/api/keywords?site=example.com' : '/v1/openapi.json';
      const request = `GET ${path} HTTP/1.1\r\nHost: gateway\r\n\r\n`;
      const socket = connect({ port: gateway.port, host: '127.0.0.1', allowHalfOpen: true });
      sockets.push(socket);
      socket.on('error', () => {});
      socket.pause(); // never reads an answer
      socket.once('connect', () => socket.write(request.repeat(REQUESTS_PER_CONNECTION)));
    }

    const paying: Array<{ status: number; ms: number }> = [];
    let peakSampled = 0;
    const sampler = setInterval(() => {
      peakSampled = Math.max(peakSampled, gateway.memoryMb().rss);
    }, 100);
    try {
      // One paying request at a time, on a fresh connection each, for 8 seconds of flood.
      const until = Date.now() + 8_000;
      while (Date.now() < until) {
        const started = performance.now();
        const status = await gateway.paying();
        paying.push({ status, ms: performance.now() - started });
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      clearInterval(sampler);
    }
    const { peak } = gateway.memoryMb();
    const statuses = paying.map((call) => call.status);
    assert.ok(paying.length >= 5, `only ${paying.length} paying requests were made`);
    assert.deepEqual(statuses, Array(paying.length).fill(200));
    // Within 1 s each on a quiet machine; on a loaded one the flood's first reads (Node parses a whole
    // 64 KiB read per connection) may hold the first answer longer, never the 5 s.
    const slow = paying.filter((call) => call.ms >= 1_000).map((call) => Math.round(call.ms));
    assert.ok(slow.length <= Math.floor(paying.length / 10), `answers over 1 s: ${slow.join(', ')} ms`);
    assert.ok(
      slow.every((ms) => ms < 5_000),
      `answers over 5 s: ${slow.join(', ')} ms`,
    );
    assert.ok(
      peak < PEAK_RSS_LIMIT_MB,
      `peak RSS ${Math.round(peak)} MB (at start ${Math.round(before.rss)}, sampled ${Math.round(peakSampled)})`,
    );
    // The gateway is still there and serving once the flood stops.
    for (const socket of sockets) socket.destroy();
    assert.equal(await gateway.paying(), 200);
  });
});
