import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { createApp } from '../../src/app.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { fakeServices, PLATFORM_TOKEN } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

const SUMMARY_EVERY_MS = 10_000;
const LINES_PER_SECOND = 20;

/**
 * A platform that fails every call while two organizations flood the gateway: each call is a
 * 502 to its caller, yet the error log gets a bounded number of lines a second, none with a
 * stack (an upstream's failure is expected, and its stack would only show the gateway's own
 * calls), then one summary line that counts the rest by reason.
 */
describe('error lines under a flood of upstream failures', function () {
  this.timeout(40_000);

  it('writes a rationed number of lines without stacks, then a summary with the count of the rest', async () => {
    const failing = createServer((req, res) => {
      req.resume();
      req.on('end', () =>
        res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway upstream of the platform'),
      );
    });
    await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
    const platformUrl = `http://127.0.0.1:${(failing.address() as AddressInfo).port}/graphql`;
    const written: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    const platform = createPlatformClient({ url: platformUrl, token: PLATFORM_TOKEN, timeoutMs: 5000 });
    const server = await listen(createApp(fakeServices({ logger, platform })));
    const dispatcher = new Agent({ connections: 32 });
    try {
      const started = performance.now();
      const statuses = await Promise.all(
        Array.from({ length: 400 }, async (_, i) => {
          const res = await request(`${server.url}/v1/api/keywords?site=site-${i}.example.com`, {
            headers: { authorization: `Bearer ${i % 2 === 0 ? 'key-org-a' : 'key-org-b'}` },
            dispatcher,
          });
          await res.body.arrayBuffer();
          return res.statusCode;
        }),
      );
      const floodSeconds = (performance.now() - started) / 1000;
      assert.deepEqual([...new Set(statuses)], [502]);
      const failedLines = () =>
        written.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => line.level === 50);
      const single = failedLines().filter((line) => line.msg === 'request failed');
      assert.ok(
        single.length <= LINES_PER_SECOND * (Math.ceil(floodSeconds) + 1),
        `${single.length} error lines in ${floodSeconds.toFixed(1)} s`,
      );
      assert.ok(single.length >= 1);
      for (const line of single) {
        assert.equal(line.reason, 'platform_failed');
        assert.equal(line.upstream, 'platform');
        assert.equal(line.err, undefined);
      }
      // The summary comes within its period of the first line held back.
      const deadline = performance.now() + SUMMARY_EVERY_MS + 5_000;
      while (!failedLines().some((line) => line.msg !== 'request failed') && performance.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 200));
      const summaries = failedLines().filter((line) => line.msg === 'failed requests not logged one by one');
      assert.equal(summaries.length, 1);
      assert.deepEqual(summaries[0]?.byReason, { platform_failed: 400 - single.length });
      assert.equal(summaries[0]?.failed, 400 - single.length);
      assert.ok(!written.join('').includes('"stack"'), 'no stack in any line');
    } finally {
      await dispatcher.close();
      await server.close();
      failing.closeAllConnections();
      await new Promise<void>((resolve) => failing.close(() => resolve()));
    }
  });
});
