import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { UpstreamError } from '../../src/errors.js';
import { KEY_SERVICE_CONNECTIONS } from '../../src/upstream/answerSizes.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { countingServer, trickle } from '../support/countingServer.js';
import { keyHashOf, testKey } from '../support/keys.js';

/** Every outcome of `calls`, a timeout counted as such. */
async function timeouts(calls: Array<Promise<unknown>>): Promise<number> {
  const outcomes = await Promise.all(calls.map((call) => call.then(String, (err: unknown) => err)));
  return outcomes.filter((outcome) => outcome instanceof UpstreamError && outcome.failure === 'timeout').length;
}

describe('a key service that trickles its answers', () => {
  const TIMEOUT_MS = 500;

  it('abandons 30 verifications at their deadline, within its connections: none open 1 s after their timeouts', async () => {
    const keyService = await countingServer((_req, res) => trickle(res));
    try {
      const client = createKeyServiceClient({ url: keyService.url, token: 't', timeoutMs: TIMEOUT_MS });
      const keys = Array.from({ length: 30 }, (_, i) => keyHashOf(testKey(`trickled ${i}`)));
      assert.equal(await timeouts(keys.map((hash) => client.verify(hash))), 30);
      await sleep(1000);
      assert.ok(keyService.counts.maxRequests <= KEY_SERVICE_CONNECTIONS, `${keyService.counts.maxRequests} at once`);
      assert.equal(keyService.counts.requests, 0, 'requests still open at the key service');
      // Those that carried the calls, and any undici opened in their place (nodejs/undici#5845).
      assert.equal(keyService.counts.connections, 0, 'connections still open at the key service');
    } finally {
      await keyService.close();
    }
  });

  it('abandons usage deliveries at their deadline the same way', async () => {
    const keyService = await countingServer((_req, res) => trickle(res));
    try {
      const client = createKeyServiceClient({ url: keyService.url, token: 't', timeoutMs: TIMEOUT_MS });
      const event = () => ({
        id: randomUUID(),
        keyId: 'key_1',
        organizationId: 'org_1',
        route: '/v1/api/keywords',
        at: new Date().toISOString(),
      });
      assert.equal(await timeouts(Array.from({ length: 4 }, () => client.recordUsage([event()]))), 4);
      await sleep(1000);
      assert.equal(keyService.counts.received, 4);
      assert.equal(keyService.counts.requests, 0, 'requests still open at the key service');
      // Those that carried the calls, and any undici opened in their place (nodejs/undici#5845).
      assert.equal(keyService.counts.connections, 0, 'connections still open at the key service');
    } finally {
      await keyService.close();
    }
  });
});
