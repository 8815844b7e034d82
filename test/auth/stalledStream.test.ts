import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import {
  answerEveryPlatformCall,
  type MeteredGateway,
  startMeteredGateway,
  statusesOf,
} from '../support/meteredGateway.js';

/**
 * Revocation when the event stream stalls without closing (a silent partition, a proxy
 * holding the connection): cached verifications are trusted only while bytes arrive
 * within the liveness window, so the revoked key is refused once the window has passed
 * since the last byte, although no event announced the revocation.
 */

const KEY = testKey('stalled stream');
/** The liveness window for this test; in production the ping interval plus a margin. */
const WINDOW_MS = 400;
const PING_EVERY_MS = 100;

describe('revocation under a stalled event stream', () => {
  let keyService: FakeKeyService;
  let gateway: MeteredGateway;
  let pings: NodeJS.Timeout;

  beforeEach(async () => {
    answerEveryPlatformCall();
    keyService = await startFakeKeyService();
    keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { ceiling: null } }));
    pings = setInterval(() => keyService.sendComment('ping'), PING_EVERY_MS);
    gateway = await startMeteredGateway(keyService, { idleTimeoutMs: WINDOW_MS });
    await eventually('following the event stream', () => keyService.openStreams() === 1);
  });
  afterEach(async () => {
    clearInterval(pings);
    await gateway.close();
    await keyService.close();
  });

  it('serves from the cache while pings arrive, and refuses a revoked key once the stream has been silent for the window', async () => {
    assert.deepEqual(await statusesOf(gateway.url, KEY, 5, 1), [200, 200, 200, 200, 200]);
    await new Promise((resolve) => setTimeout(resolve, 2 * PING_EVERY_MS));
    assert.deepEqual(await statusesOf(gateway.url, KEY, 1, 1), [200]);
    assert.equal(keyService.verifyCalls(), 1, 'while pings arrive, the cached verification is used');

    keyService.stallStreams(); // open, but nothing more arrives: not the revocation, not a ping
    const stalledAt = Date.now();
    keyService.revoke(KEY);

    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS + 50));
    const [status] = await statusesOf(gateway.url, KEY, 1, 1);
    assert.equal(status, 401, `a revoked key was served ${Date.now() - stalledAt} ms after the stream's last byte`);
    // The silent stream is given up and followed again (the revocation then arrives by replay).
    await eventually('reconnected', () => keyService.streamRequests.length >= 2 && keyService.openStreams() === 1);
    assert.deepEqual(await statusesOf(gateway.url, KEY, 3, 3), [401, 401, 401]);
  });
});
