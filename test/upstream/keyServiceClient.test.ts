import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { UpstreamError } from '../../src/errors.js';
import {
  createKeyServiceClient,
  type KeyServiceCall,
  UsageRejectedError,
} from '../../src/upstream/keyServiceClient.js';
import type { KeyServiceEvent } from '../../src/upstream/keyServiceContract.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { keyHashOf, testKey, verifyAnswer } from '../support/keys.js';

const KEY_SERVICE = 'http://key-service.test';
const TOKEN = 'key-service-token';
const KEY = testKey('client');
const HASH = keyHashOf(KEY);

function client(timeoutMs = 2000) {
  const calls: Array<{ call: KeyServiceCall; outcome: string }> = [];
  const keyService = createKeyServiceClient({
    url: `${KEY_SERVICE}/`,
    token: TOKEN,
    timeoutMs,
    onCall: (call, _seconds, outcome) => calls.push({ call, outcome }),
  });
  return { keyService, calls };
}

const isUpstream = (failure: UpstreamError['failure'], retryAfter?: number) => (err: unknown) => {
  assert.ok(err instanceof UpstreamError, String(err));
  assert.equal(err.upstream, 'key-service');
  assert.equal(err.failure, failure);
  if (retryAfter !== undefined) assert.equal(err.retryAfterSeconds, retryAfter);
  return true;
};

describe('keyServiceClient', () => {
  describe('verify', () => {
    it('posts only the hash, with the service token, and reads the verification', async () => {
      const scope = nock(KEY_SERVICE, { reqheaders: { authorization: `Bearer ${TOKEN}` } })
        .post('/v1/keys/verify', { keyHash: HASH })
        .reply(200, verifyAnswer(KEY, { usage: { used: 7, ceiling: null } }));
      const { keyService, calls } = client();
      const verification = await keyService.verify(HASH);
      assert.ok(verification);
      assert.equal(verification.key.organizationId, 'org_a');
      assert.deepEqual(verification.key.permissions, ['read']);
      assert.equal(verification.key.expiresAt.toISOString(), '2027-01-10T09:00:00.000Z');
      assert.equal(verification.key.revokedAt, null);
      assert.equal(verification.organization.plan, 'pro');
      assert.deepEqual(
        { used: verification.organization.usage.used, ceiling: verification.organization.usage.ceiling },
        { used: 7, ceiling: null },
      );
      assert.deepEqual(calls, [{ call: 'verify', outcome: 'ok' }]);
      scope.done();
    });

    it('reads a revoked key as revoked', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .reply(200, verifyAnswer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } }));
      const verification = await client().keyService.verify(HASH);
      assert.equal(verification?.key.revokedAt?.toISOString(), '2026-11-20T14:05:00.000Z');
      scope.done();
    });

    it('answers null for 404 unknown_key', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(404, { error: 'unknown_key' });
      assert.equal(await client().keyService.verify(HASH), null);
      scope.done();
    });

    it('treats a 404 without unknown_key (a wrong route, a proxy page) as a bad answer, not as unknown', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(404, '<html>Not Found</html>');
      await assert.rejects(client().keyService.verify(HASH), isUpstream('bad_answer'));
      scope.done();
    });

    for (const status of [400, 401, 500, 502]) {
      it(`fails with bad_answer on ${status}`, async () => {
        const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(status, { error: 'whatever' });
        const { keyService, calls } = client();
        await assert.rejects(keyService.verify(HASH), isUpstream('bad_answer'));
        assert.deepEqual(calls, [{ call: 'verify', outcome: 'bad_answer' }]);
        scope.done();
      });
    }

    for (const status of [429, 503]) {
      it(`fails with throttled and the Retry-After on ${status}`, async () => {
        const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(status, '', { 'Retry-After': '7' });
        await assert.rejects(client().keyService.verify(HASH), isUpstream('throttled', 7));
        scope.done();
      });
    }

    it('fails with timeout when no answer comes in time', async () => {
      // A deadline generous enough that even a starved process reaches the key service before it.
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').delay(3000).reply(200, verifyAnswer(KEY));
      const { keyService, calls } = client(1000);
      await assert.rejects(keyService.verify(HASH), isUpstream('timeout'));
      assert.deepEqual(calls, [{ call: 'verify', outcome: 'timeout' }]);
      scope.done();
    });

    it('fails with unreachable when the connection is refused', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
      await assert.rejects(client().keyService.verify(HASH), isUpstream('unreachable'));
      scope.done();
    });

    it('fails with unreachable when nothing listens at the address', async () => {
      const server = createServer();
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const keyService = createKeyServiceClient({ url: `http://127.0.0.1:${port}`, token: TOKEN, timeoutMs: 500 });
      await assert.rejects(keyService.verify(HASH), isUpstream('unreachable'));
    });

    it('fails with bad_answer on a body of another form', async () => {
      const broken = verifyAnswer(KEY) as unknown as { key: Record<string, unknown> };
      broken.key.permissions = 'read';
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .reply(200, broken)
        .post('/v1/keys/verify')
        .reply(200, 'not json');
      const { keyService } = client();
      await assert.rejects(keyService.verify(HASH), isUpstream('bad_answer'));
      await assert.rejects(keyService.verify(HASH), isUpstream('bad_answer'));
      scope.done();
    });

    it('fails with bad_answer when the key and the organization disagree', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/keys/verify')
        .reply(200, verifyAnswer(KEY, { key: { organizationId: 'org_a' }, organization: { id: 'org_b' } }));
      await assert.rejects(client().keyService.verify(HASH), isUpstream('bad_answer'));
      scope.done();
    });

    it('keeps upstream messages out of the error message shown to no one but the log', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/keys/verify').reply(500, { error: 'db on fire at 10.0.0.3' });
      await assert.rejects(client().keyService.verify(HASH), (err: unknown) => {
        assert.ok(err instanceof UpstreamError);
        assert.doesNotMatch(err.detail, /10\.0\.0\.3/);
        return true;
      });
      scope.done();
    });
  });

  describe('recordUsage', () => {
    const events = [
      {
        id: '9b2f7c4e-2a61-4d3b-9d55-0b1f4d1b2c3a',
        keyId: 'key_1',
        organizationId: 'org_a',
        route: '/v1/api/keywords',
        at: '2026-11-21T12:00:00.000Z',
      },
    ];

    it('posts the events and answers accepted and duplicates', async () => {
      const scope = nock(KEY_SERVICE, { reqheaders: { authorization: `Bearer ${TOKEN}` } })
        .post('/v1/usage', { events })
        .reply(200, { accepted: 1, duplicates: 0 });
      const { keyService, calls } = client();
      assert.deepEqual(await keyService.recordUsage(events), { accepted: 1, duplicates: 0 });
      assert.deepEqual(calls, [{ call: 'usage', outcome: 'ok' }]);
      scope.done();
    });

    it('throws UsageRejectedError on 400 (nothing counted; sending it again cannot help)', async () => {
      const scope = nock(KEY_SERVICE).post('/v1/usage').reply(400, { error: 'invalid_request' });
      await assert.rejects(client().keyService.recordUsage(events), (err: unknown) => {
        assert.ok(err instanceof UsageRejectedError);
        assert.ok(err instanceof UpstreamError);
        assert.equal(err.upstream, 'key-service');
        return true;
      });
      scope.done();
    });

    it('throws UpstreamError on 500, 429 and a malformed receipt', async () => {
      const scope = nock(KEY_SERVICE)
        .post('/v1/usage')
        .reply(500)
        .post('/v1/usage')
        .reply(429, '', { 'Retry-After': '3' })
        .post('/v1/usage')
        .reply(200, { accepted: 'one' });
      const { keyService } = client();
      await assert.rejects(keyService.recordUsage(events), isUpstream('bad_answer'));
      await assert.rejects(keyService.recordUsage(events), isUpstream('throttled', 3));
      await assert.rejects(keyService.recordUsage(events), isUpstream('bad_answer'));
      scope.done();
    });
  });

  describe('followEvents', () => {
    let fake: FakeKeyService;
    const streams: Array<{ close(): Promise<void> }> = [];

    beforeEach(async () => {
      fake = await startFakeKeyService();
    });
    afterEach(async () => {
      for (const stream of streams.splice(0)) await stream.close();
      await fake.close();
    });

    function follow(options: { idleTimeoutMs?: number } = {}) {
      const received: KeyServiceEvent[] = [];
      const changes: boolean[] = [];
      const keyService = createKeyServiceClient({
        url: fake.url,
        token: fake.token,
        timeoutMs: 1000,
        events: { reconnectDelayMs: 10, maxReconnectDelayMs: 50, ...options },
      });
      const stream = keyService.followEvents({
        onEvent: (event) => received.push(event),
        onConnectionChange: (connected) => changes.push(connected),
      });
      streams.push(stream);
      return { stream, received, changes };
    }

    it('delivers key.revoked, organization.updated and reset, ignoring pings and unknown events', async () => {
      const { stream, received } = follow();
      await eventually('stream open', () => stream.isConnected());
      fake.sendComment('ping');
      fake.sendEvent('key.created', { keyId: 'key_9' });
      fake.sendEvent('key.revoked', {
        keyId: 'key_1',
        keyHash: HASH,
        organizationId: 'org_a',
        revokedAt: '2026-11-21T12:00:00.000Z',
      });
      fake.sendEvent('organization.updated', { organizationId: 'org_b' });
      fake.sendEvent('reset', {});
      await eventually('three events', () => received.length === 3);
      assert.deepEqual(received, [
        {
          type: 'key.revoked',
          keyId: 'key_1',
          keyHash: HASH,
          organizationId: 'org_a',
          revokedAt: '2026-11-21T12:00:00.000Z',
        },
        { type: 'organization.updated', organizationId: 'org_b' },
        { type: 'reset' },
      ]);
    });

    it('sends the service token to the stream', async () => {
      const keyService = createKeyServiceClient({
        url: fake.url,
        token: 'wrong',
        timeoutMs: 1000,
        events: { reconnectDelayMs: 10 },
      });
      const stream = keyService.followEvents({ onEvent: () => {} });
      streams.push(stream);
      await eventually('refused attempts', () => fake.unauthorizedRequests() >= 2);
      assert.equal(stream.isConnected(), false);
      assert.equal(fake.streamRequests.length, 0);
    });

    it('turns an unreadable revocation into a reset (any key may be the revoked one)', async () => {
      const { stream, received } = follow();
      await eventually('stream open', () => stream.isConnected());
      fake.sendEvent('key.revoked', { keyId: 'key_1' });
      fake.sendEvent('organization.updated', 'garbage');
      await eventually('two events', () => received.length === 2);
      assert.deepEqual(received, [{ type: 'reset' }, { type: 'reset' }]);
    });

    it('reports the drop, reconnects with Last-Event-ID and receives what it missed', async () => {
      const { stream, received, changes } = follow();
      await eventually('stream open', () => stream.isConnected());
      fake.sendEvent('organization.updated', { organizationId: 'org_a' });
      await eventually('first event', () => received.length === 1);

      fake.refuseStreams(503);
      fake.dropStreams();
      await eventually('drop seen', () => !stream.isConnected());
      const missedId = fake.sendEvent('organization.updated', { organizationId: 'org_b' });
      await eventually('a refused reconnect', () => fake.streamRequests.length >= 2);
      fake.refuseStreams(null);

      await eventually('reconnected', () => stream.isConnected());
      await eventually('missed event replayed', () => received.length === 2);
      assert.deepEqual(received[1], { type: 'organization.updated', organizationId: 'org_b' });
      assert.equal(fake.streamRequests[0]?.lastEventId, undefined);
      assert.ok(fake.streamRequests.slice(1).every((r) => r.lastEventId === String(Number(missedId) - 1)));
      assert.deepEqual(changes.slice(0, 3), [true, false, true]);
    });

    it('treats a stream silent for longer than the idle timeout as dropped, and reconnects', async () => {
      const { stream, changes } = follow({ idleTimeoutMs: 80 });
      await eventually('stream open', () => stream.isConnected());
      await eventually('silent stream dropped and reopened', () => changes.length >= 3);
      assert.deepEqual(changes.slice(0, 3), [true, false, true]);
      assert.ok(fake.streamRequests.length >= 2);
    });

    it('keeps a stream alive with pings', async () => {
      // Pings ten times as often as the idle timeout, for half as long again: a starved process's late
      // timers still leave the stream heard from in time.
      const { stream, changes } = follow({ idleTimeoutMs: 1000 });
      await eventually('stream open', () => stream.isConnected());
      for (let i = 0; i < 15; i++) {
        fake.sendComment('ping');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(changes, [true]);
      assert.equal(fake.streamRequests.length, 1);
    });

    it('is not connected on an answer that is not an event stream', async () => {
      const server = createServer((_req, res: ServerResponse) => {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = server.address() as AddressInfo;
        let attempts = 0;
        const keyService = createKeyServiceClient({
          url: `http://127.0.0.1:${port}`,
          token: TOKEN,
          timeoutMs: 500,
          events: { reconnectDelayMs: 10, maxReconnectDelayMs: 20 },
        });
        const changes: boolean[] = [];
        server.on('request', () => (attempts += 1));
        const stream = keyService.followEvents({ onEvent: () => {}, onConnectionChange: (c) => changes.push(c) });
        await eventually('several attempts', () => attempts >= 3);
        await stream.close();
        assert.deepEqual(changes, []);
      } finally {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    });

    it('closes: no longer connected, no reconnects', async () => {
      const { stream } = follow();
      await eventually('stream open', () => stream.isConnected());
      await stream.close();
      assert.equal(stream.isConnected(), false);
      const requests = fake.streamRequests.length;
      await new Promise((resolve) => setTimeout(resolve, 60));
      assert.equal(fake.streamRequests.length, requests);
      assert.equal(fake.openStreams(), 0);
    });
  });
});
