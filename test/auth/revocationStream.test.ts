import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { FIXED_NOW, fakeServices, PLATFORM_URL, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import { EMPTY_KEYWORDS } from '../support/platformAnswers.js';

/**
 * Revocation is immediate (spec 3.1): a key service on a real socket, its event
 * stream followed by the authenticator, and requests through the whole app.
 */

const KEY = testKey('stream reader');
const PATH = '/v1/api/keywords?site=example.com';

describe('revocation through the event stream', () => {
  let keyService: FakeKeyService;
  let authenticator: KeyAuthenticator;
  let server: Awaited<ReturnType<typeof listen>>;
  let logLines: string[];
  const logged = (text: string) => logLines.filter((line) => line.includes(text)).length;

  beforeEach(async () => {
    // The platform answers every authenticated request for org_a (and only org_a); optional, as
    // the reconnection test makes none.
    nock(new URL(PLATFORM_URL).origin)
      .persist()
      .post('/graphql', (body: { variables: Record<string, unknown> }) => body.variables.organizationId === 'org_a')
      .optionally()
      .reply(200, EMPTY_KEYWORDS);
    keyService = await startFakeKeyService();
    keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { ceiling: null } }));
    logLines = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString('utf8'));
        callback();
      },
    });
    authenticator = createKeyAuthenticator({
      keyService: createKeyServiceClient({
        url: keyService.url,
        token: keyService.token,
        timeoutMs: 2000,
        events: { reconnectDelayMs: 10, maxReconnectDelayMs: 40 },
      }),
      ledger: testLedger(),
      now: () => FIXED_NOW,
      logger: pino({ level: 'info' }, sink),
    });
    server = await listen(createApp(fakeServices({ authenticator })));
    authenticator.start();
    await eventually('following the event stream', () => logged('following key events') === 1);
  });

  afterEach(async () => {
    await authenticator.close();
    await server.close();
    await keyService.close();
    for (const line of logLines) assert.doesNotMatch(line, new RegExp(KEY), 'a log line holds the key');
  });

  async function statusOf(): Promise<{ status: number; reason: string | undefined }> {
    const res = await fetch(`${server.url}${PATH}`, { headers: { authorization: `Bearer ${KEY}` } });
    const body = (await res.json()) as { errors: Array<{ reason?: string }> };
    return { status: res.status, reason: body.errors[0]?.reason };
  }

  it('serves the first requests from the verification cache, then refuses the request after a revocation event', async () => {
    assert.equal((await statusOf()).status, 200);
    assert.equal((await statusOf()).status, 200);
    assert.equal(keyService.verifyCalls(), 1, 'the second request was not served from the cache');

    keyService.revoke(KEY);
    await eventually('revocation received', () => logLines.some((line) => line.includes('key revoked')));

    assert.deepEqual(await statusOf(), { status: 401, reason: 'invalid_key' });
    assert.equal(keyService.verifyCalls(), 2);
    // Revoking again changes nothing: still refused.
    keyService.revoke(KEY);
    assert.deepEqual(await statusOf(), { status: 401, reason: 'invalid_key' });
  });

  it('verifies every request while the stream is down, so a revocation then is seen at once', async () => {
    assert.equal((await statusOf()).status, 200);
    keyService.refuseStreams(503);
    keyService.dropStreams();
    await eventually('stream seen down', () => logged('key event stream down') === 1);

    assert.equal((await statusOf()).status, 200);
    assert.equal((await statusOf()).status, 200);
    assert.equal(keyService.verifyCalls(), 3, 'a request was served from cache while the stream was down');

    keyService.revoke(KEY); // no stream to announce it
    assert.deepEqual(await statusOf(), { status: 401, reason: 'invalid_key' });

    keyService.refuseStreams(null);
    await eventually('following again', () => logged('following key events') === 2);
    assert.deepEqual(await statusOf(), { status: 401, reason: 'invalid_key' });
  });

  it('reconnects with Last-Event-ID after a drop', async () => {
    keyService.sendEvent('organization.updated', { organizationId: 'org_z' });
    await eventually('event received', () => logLines.some((line) => line.includes('organization updated')));
    keyService.dropStreams();
    await eventually(
      'reconnected',
      () => keyService.streamRequests.length >= 2 && logged('following key events') === 2,
    );
    assert.equal(keyService.streamRequests[1]?.lastEventId, '1');
  });
});
