import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { createApp } from '../../src/app.js';
import { REFUSAL_DELAY_MS } from '../../src/http/refusalDelay.js';
import { fakeServices } from '../support/fakeServices.js';
import { listenHardened } from './listenHardened.js';

/** Writes `requests` in one write; resolves with the status lines seen, each with the ms since the write. */
function pipelined(port: number, requests: string): Promise<Array<{ status: string; ms: number }>> {
  return new Promise((resolve, reject) => {
    const seen: Array<{ status: string; ms: number }> = [];
    let text = '';
    let sentAt = 0;
    const socket = connect(port, '127.0.0.1', () => {
      sentAt = performance.now();
      socket.write(requests);
    });
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1] ?? '');
      for (const status of statuses.slice(seen.length)) seen.push({ status, ms: performance.now() - sentAt });
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(seen));
  });
}

/**
 * A refusal to a caller without a valid key leaves REFUSAL_DELAY_MS after it arrived, so its
 * timing tells nothing of whether its key was seen before. Pipelined behind another request
 * (`GET /healthz` and a keyed request in one write) it took the same path as any answer due
 * in its turn, at once when the key's verification was cached: it waits the same now.
 */
describe('the refusal hold of a pipelined request', () => {
  let server: Awaited<ReturnType<typeof listenHardened>>;
  before(async () => {
    server = await listenHardened(createApp(fakeServices({ refusalDelayMs: REFUSAL_DELAY_MS })));
  });
  after(() => server.close());

  const keyed = (key: string, extra = '') =>
    `GET /v1/api/keywords?site=example.com HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer ${key}\r\n${extra}\r\n`;

  it('sends the 401 behind a /healthz no sooner than alone, and closes the connection after it', async () => {
    const alone = await pipelined(server.port, keyed('never-issued'));
    const behind = await pipelined(
      server.port,
      `GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n${keyed('never-issued')}`,
    );
    assert.deepEqual(
      alone.map(({ status }) => status),
      ['401'],
    );
    assert.deepEqual(
      behind.map(({ status }) => status),
      ['200', '401'],
    );
    for (const { ms } of [...alone, ...behind.slice(1)])
      assert.ok(ms >= REFUSAL_DELAY_MS - 5, `a 401 after ${ms.toFixed(0)} ms`);
    // The probe before it is not held.
    assert.ok((behind[0]?.ms ?? 0) < REFUSAL_DELAY_MS, `the 200 after ${behind[0]?.ms.toFixed(0)} ms`);
  });

  it('holds each of several refusals pipelined behind one another', async () => {
    const answers = await pipelined(
      server.port,
      `GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n${keyed('never-issued-1')}${keyed('never-issued-2')}`,
    );
    assert.deepEqual(
      answers.map(({ status }) => status),
      ['200', '401'],
    );
    assert.ok((answers[1]?.ms ?? 0) >= REFUSAL_DELAY_MS - 5, `a 401 after ${answers[1]?.ms.toFixed(0)} ms`);
  });
});
