import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createKeyAuthenticator, type KeyAuthenticator, type KeyAuthenticatorCacheOptions } from '../../src/auth/keyAuthenticator.js';
import type { PresentedCredentials } from '../../src/auth/principal.js';
import { ApiError, UpstreamError } from '../../src/errors.js';
import type { KeyEventHandlers, KeyServiceClient, KeyServiceEvent, Verification } from '../../src/upstream/keyServiceClient.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import { keyHashOf, keyPrefixOf, testKey, verifyAnswer, withBadChecksum, type VerifyAnswerJson, type VerifyAnswerOverrides } from '../support/keys.js';

const KEY = testKey('authenticator');
const KEY_B = testKey('authenticator org b');
const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMTkifQ.c2lnbmF0dXJl';

/** The client's parsed form of a verify answer. */
function asVerification(json: VerifyAnswerJson): Verification {
  return {
    key: {
      id: json.key.id,
      organizationId: json.key.organizationId,
      prefix: json.key.prefix,
      permissions: json.key.permissions,
      expiresAt: new Date(json.key.expiresAt),
      revokedAt: json.key.revokedAt === null ? null : new Date(json.key.revokedAt),
    },
    organization: {
      id: json.organization.id,
      plan: json.organization.plan,
      usage: {
        periodStart: new Date(json.organization.usage.periodStart),
        periodEnd: new Date(json.organization.usage.periodEnd),
        used: json.organization.usage.used,
        ceiling: json.organization.usage.ceiling,
      },
    },
  };
}

/** A key service under the test's control: answers, failures, a gate to hold answers, the stream. */
function controlledKeyService() {
  const answers = new Map<string, Verification>();
  let handlers: KeyEventHandlers | undefined;
  let connected = false;
  let gate: Promise<void> | undefined;
  const service = {
    calls: 0,
    failure: undefined as UpstreamError | undefined,
    streamClosed: false,
    answer(key: string, overrides: VerifyAnswerOverrides = {}) {
      answers.set(keyHashOf(key), asVerification(verifyAnswer(key, overrides)));
    },
    /** Holds every verify answer until the returned release is called. */
    hold(): () => void {
      let release = () => {};
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    connect() {
      connected = true;
      handlers?.onConnectionChange?.(true, 'test');
    },
    drop() {
      connected = false;
      handlers?.onConnectionChange?.(false, 'test');
    },
    emit(event: KeyServiceEvent) {
      handlers?.onEvent(event);
    },
    client: {
      async verify(keyHash: string) {
        service.calls += 1;
        const held = gate;
        const answer = answers.get(keyHash) ?? null;
        if (held) await held;
        if (service.failure) throw service.failure;
        return answer;
      },
      followEvents(h: KeyEventHandlers) {
        handlers = h;
        return {
          isConnected: () => connected,
          async close() {
            connected = false;
            service.streamClosed = true;
          },
        };
      },
    } satisfies Pick<KeyServiceClient, 'verify' | 'followEvents'>,
  };
  return service;
}

function bearer(key: string): PresentedCredentials {
  return { authorization: `Bearer ${key}`, apiKeyHeader: undefined, keyLikeQueryParameters: [] };
}

const refusedWith = (status: number, reason: string) => (err: unknown) => {
  assert.ok(err instanceof ApiError, String(err));
  assert.equal(err.status, status);
  assert.equal(err.reason, reason);
  if (status === 401) assert.equal(err.headers['WWW-Authenticate'], 'Bearer');
  return true;
};

describe('keyAuthenticator', () => {
  let nowMs: number;
  let pending: Map<string, number>;
  let service: ReturnType<typeof controlledKeyService>;
  let logLines: string[];
  let authenticator: KeyAuthenticator;

  function build(cache: Partial<KeyAuthenticatorCacheOptions> = {}): KeyAuthenticator {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logLines.push(chunk.toString('utf8'));
        callback();
      },
    });
    return createKeyAuthenticator({
      keyService: service.client,
      pendingUsage: (organizationId) => pending.get(organizationId) ?? 0,
      now: () => new Date(nowMs),
      logger: pino({ level: 'debug' }, sink),
      cache,
    });
  }

  beforeEach(() => {
    nowMs = FIXED_NOW.getTime();
    pending = new Map();
    service = controlledKeyService();
    logLines = [];
    authenticator = build();
  });
  afterEach(async () => {
    await authenticator.close();
    for (const line of logLines) assert.doesNotMatch(line, /atl_[0-9A-Za-z]{38}/, 'a log line holds a whole key');
  });

  describe('refusals decided locally, without the key service', () => {
    it('refuses a malformed key and a bad checksum with 401 malformed_key', async () => {
      for (const text of [withBadChecksum(KEY), 'atl_short', KEY.slice(0, -1), `${KEY}x`, 'hello']) {
        await assert.rejects(authenticator.authenticate(bearer(text)), refusedWith(401, 'malformed_key'));
      }
      assert.equal(service.calls, 0);
    });

    it('refuses a JWT-shaped bearer with 403 not_an_api_key', async () => {
      await assert.rejects(authenticator.authenticate(bearer(JWT)), refusedWith(403, 'not_an_api_key'));
      await assert.rejects(
        authenticator.authenticate({ authorization: undefined, apiKeyHeader: JWT, keyLikeQueryParameters: [] }),
        refusedWith(403, 'not_an_api_key'),
      );
      assert.equal(service.calls, 0);
    });

    it('refuses a missing key, a key in the URL and two different keys', async () => {
      await assert.rejects(
        authenticator.authenticate({ authorization: undefined, apiKeyHeader: undefined, keyLikeQueryParameters: [] }),
        refusedWith(401, 'missing_key'),
      );
      await assert.rejects(
        authenticator.authenticate({ ...bearer(KEY), keyLikeQueryParameters: ['token'] }),
        refusedWith(401, 'key_in_query'),
      );
      await assert.rejects(
        authenticator.authenticate({ ...bearer(KEY), apiKeyHeader: KEY_B }),
        refusedWith(401, 'conflicting_credentials'),
      );
      assert.equal(service.calls, 0);
    });
  });

  describe('key states (spec 3.1)', () => {
    it('lets an active key in as its own organization, named by prefix', async () => {
      service.answer(KEY, { key: { organizationId: 'org_7Hq2', id: 'key_1' } });
      const principal = await authenticator.authenticate(bearer(KEY));
      assert.deepEqual(principal, { organizationId: 'org_7Hq2', keyId: 'key_1', keyPrefix: keyPrefixOf(KEY) });
      assert.equal(service.calls, 1);
    });

    it('refuses an unknown key with 401 invalid_key', async () => {
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
    });

    it('refuses a key whose expiry is now or past with 401 expired_key, and lets it in a millisecond before', async () => {
      service.answer(KEY, { key: { expiresAt: FIXED_NOW.toISOString() } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      service.answer(KEY, { key: { expiresAt: '2026-01-01T00:00:00.000Z' } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      service.answer(KEY, { key: { expiresAt: new Date(FIXED_NOW.getTime() + 1).toISOString() } });
      assert.ok(await authenticator.authenticate(bearer(KEY)));
    });

    it('refuses a revoked key exactly as an unknown one (and a revoked, expired one too)', async () => {
      const unknown = await authenticator.authenticate(bearer(KEY_B)).catch((err: unknown) => err);
      service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      const revoked = await authenticator.authenticate(bearer(KEY)).catch((err: unknown) => err);
      service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', expiresAt: '2026-01-01T00:00:00.000Z' } });
      const revokedExpired = await authenticator.authenticate(bearer(KEY)).catch((err: unknown) => err);
      for (const err of [unknown, revoked, revokedExpired]) refusedWith(401, 'invalid_key')(err);
      const shape = (err: unknown) => {
        const e = err as ApiError;
        return { status: e.status, code: e.code, message: e.message, reason: e.reason, headers: e.headers };
      };
      assert.deepEqual(shape(revoked), shape(unknown));
      assert.deepEqual(shape(revokedExpired), shape(unknown));
    });

    it('keeps refusing a key revoked again (unchanged record): it is not reactivated', async () => {
      service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
    });
  });

  describe('permissions (spec 5.2)', () => {
    const cases: Array<[string[], boolean]> = [
      [['read'], true],
      [['write', 'read'], true],
      [['read', 'audit', 'content', 'write'], true],
      [['write'], false],
      [['audit'], false],
      [['content'], false],
      [['audit', 'content', 'write'], false],
      [[], false],
      [['admin', '*', 'all'], false],
      [['READ'], false],
      [['Read'], false],
      [[' read'], false],
    ];
    for (const [permissions, allowed] of cases) {
      it(`${JSON.stringify(permissions)} → ${allowed ? 'in' : '403 missing_permission'}`, async () => {
        service.answer(KEY, { key: { permissions } });
        if (allowed) assert.ok(await authenticator.authenticate(bearer(KEY)));
        else await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'missing_permission'));
      });
    }
  });

  describe('plans', () => {
    const cases: Array<[string, boolean]> = [
      ['free', false],
      ['starter', false],
      ['pro', true],
      ['business', true],
      ['enterprise', true],
      ['platinum', false],
      ['Pro', false],
      ['', false],
    ];
    for (const [plan, allowed] of cases) {
      it(`${JSON.stringify(plan)} → ${allowed ? 'in' : '403 plan_not_eligible'}`, async () => {
        service.answer(KEY, { organization: { plan } });
        if (allowed) assert.ok(await authenticator.authenticate(bearer(KEY)));
        else await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'plan_not_eligible'));
      });
    }
  });

  describe('usage ceiling', () => {
    it('lets in below the ceiling and refuses at it (used >= ceiling)', async () => {
      service.answer(KEY, { usage: { used: 999, ceiling: 1000 } });
      assert.ok(await authenticator.authenticate(bearer(KEY)));
      service.answer(KEY, { usage: { used: 1000, ceiling: 1000 } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      service.answer(KEY, { usage: { used: 1200, ceiling: 1000 } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      service.answer(KEY, { usage: { used: 0, ceiling: 0 } });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
    });

    it('counts calls served here but not yet reported', async () => {
      service.answer(KEY, { usage: { used: 990, ceiling: 1000 } });
      pending.set('org_a', 9);
      assert.ok(await authenticator.authenticate(bearer(KEY)));
      pending.set('org_a', 10);
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      pending.set('org_b', 1000); // another organization's pending calls do not count
      pending.set('org_a', 0);
      assert.ok(await authenticator.authenticate(bearer(KEY)));
    });

    it('has no ceiling when ceiling is null', async () => {
      service.answer(KEY, { usage: { used: 50_000_000, ceiling: null } });
      pending.set('org_a', 1000);
      assert.ok(await authenticator.authenticate(bearer(KEY)));
    });
  });

  describe('key service failures', () => {
    it('passes the key service failure on (answered as 503), never a 401 and never a pass', async () => {
      service.answer(KEY);
      service.failure = new UpstreamError('key-service', 'timeout', 'verify: no answer in time');
      await assert.rejects(authenticator.authenticate(bearer(KEY)), (err: unknown) => err === service.failure);
    });
  });

  describe('verification cache', () => {
    it('verifies every request while not following the event stream', async () => {
      service.answer(KEY);
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      authenticator.start(); // started, but the stream is not open yet
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 3);
      assert.equal(authenticator.isFollowingEvents(), false);
    });

    it('reuses a verification while the stream is open, and drops it on key.revoked', async () => {
      service.answer(KEY, { key: { id: 'key_1' } });
      authenticator.start();
      service.connect();
      assert.equal(authenticator.isFollowingEvents(), true);
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 1);

      service.answer(KEY, { key: { id: 'key_1', revokedAt: '2026-11-21T12:00:00.000Z' } });
      service.emit({
        type: 'key.revoked',
        keyId: 'key_1',
        keyHash: keyHashOf(KEY),
        organizationId: 'org_a',
        revokedAt: '2026-11-21T12:00:00.000Z',
      });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(service.calls, 2);
      assert.ok(logLines.some((line) => line.includes('key revoked') && line.includes('key_1')));
    });

    it('drops only the updated organization on organization.updated', async () => {
      service.answer(KEY, { key: { organizationId: 'org_a' } });
      service.answer(KEY_B, { key: { organizationId: 'org_b' } });
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY_B));
      service.answer(KEY, { key: { organizationId: 'org_a' }, organization: { plan: 'starter' } });
      service.emit({ type: 'organization.updated', organizationId: 'org_a' });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'plan_not_eligible'));
      await authenticator.authenticate(bearer(KEY_B));
      assert.equal(service.calls, 3);
    });

    it('drops everything on reset, and on a stream drop stops caching until it is back', async () => {
      service.answer(KEY);
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      service.emit({ type: 'reset' });
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 2);

      service.drop();
      assert.equal(authenticator.isFollowingEvents(), false);
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 4);

      service.connect();
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 5);
    });

    it('never caches an answer that was on its way when a revocation arrived', async () => {
      service.answer(KEY, { key: { id: 'key_1' } });
      authenticator.start();
      service.connect();
      const release = service.hold();
      const first = authenticator.authenticate(bearer(KEY));
      service.answer(KEY, { key: { id: 'key_1', revokedAt: '2026-11-21T12:00:00.000Z' } });
      service.emit({ type: 'key.revoked', keyId: 'key_1', keyHash: keyHashOf(KEY), organizationId: 'org_a', revokedAt: '' });
      release();
      assert.ok(await first); // asked before the revocation
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(service.calls, 2);
    });

    it('shares one key-service call between concurrent requests for the same key', async () => {
      service.answer(KEY);
      service.answer(KEY_B, { key: { organizationId: 'org_b' } });
      const release = service.hold();
      const requests = [
        authenticator.authenticate(bearer(KEY)),
        authenticator.authenticate(bearer(KEY)),
        authenticator.authenticate({ authorization: undefined, apiKeyHeader: KEY, keyLikeQueryParameters: [] }),
        authenticator.authenticate(bearer(KEY_B)),
      ];
      release();
      const principals = await Promise.all(requests);
      assert.deepEqual(
        principals.map((p) => p.organizationId),
        ['org_a', 'org_a', 'org_a', 'org_b'],
      );
      assert.equal(service.calls, 2);
    });

    it('shares a failure too, and does not remember it', async () => {
      service.answer(KEY);
      service.failure = new UpstreamError('key-service', 'bad_answer', 'verify: status 500');
      const release = service.hold();
      const requests = [authenticator.authenticate(bearer(KEY)), authenticator.authenticate(bearer(KEY))];
      release();
      for (const request of requests) await assert.rejects(request, UpstreamError);
      assert.equal(service.calls, 1);
      service.failure = undefined;
      assert.ok(await authenticator.authenticate(bearer(KEY)));
      assert.equal(service.calls, 2);
    });

    it('remembers an unknown hash briefly, with or without the stream, and forgets it on reset', async () => {
      authenticator.start();
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(service.calls, 1);
      nowMs += 10_001;
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(service.calls, 2);
      service.connect();
      service.emit({ type: 'reset' });
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(service.calls, 3);
    });

    it('re-verifies an organization with a ceiling once its entry is a few seconds old', async () => {
      service.answer(KEY, { usage: { used: 10, ceiling: 1000 } });
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      nowMs += 4_000;
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 1);
      // Meanwhile other gateways (or a flushed buffer) used the rest of the allowance.
      service.answer(KEY, { usage: { used: 1000, ceiling: 1000 } });
      nowMs += 1_001;
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      assert.equal(service.calls, 2);
    });

    it('re-verifies on every request near the ceiling', async () => {
      service.answer(KEY, { usage: { used: 850, ceiling: 1000 } });
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 1);
      pending.set('org_a', 50); // headroom 100: near
      await authenticator.authenticate(bearer(KEY));
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 3);
      pending.set('org_a', 150); // pending alone reaches the ceiling
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
    });

    it('keeps an organization without a ceiling for the cache TTL, and still sees its key expire', async () => {
      service.answer(KEY, { usage: { ceiling: null }, key: { expiresAt: new Date(nowMs + 30_000).toISOString() } });
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      nowMs += 20_000;
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 1);
      nowMs += 10_000; // the key's expiry, reached while its verification is cached
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      assert.equal(service.calls, 1);
      nowMs += 31_000; // past the 60 s TTL
      await assert.rejects(authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      assert.equal(service.calls, 2);
    });

    it('close() stops following and forgets what it cached', async () => {
      service.answer(KEY);
      authenticator.start();
      service.connect();
      await authenticator.authenticate(bearer(KEY));
      await authenticator.close();
      assert.equal(service.streamClosed, true);
      assert.equal(authenticator.isFollowingEvents(), false);
      await authenticator.authenticate(bearer(KEY));
      assert.equal(service.calls, 2);
    });
  });

  describe('logs', () => {
    it('leave a refusal to the request line: the prefix is handed over, no line of its own', async () => {
      service.answer(KEY, { key: { permissions: ['write'] } });
      const told: string[] = [];
      await assert.rejects(authenticator.authenticate({ ...bearer(KEY), onKeyPrefix: (p) => told.push(p) }), ApiError);
      assert.deepEqual(told, [keyPrefixOf(KEY)]);
      assert.equal(logLines.filter((l) => l.includes('missing_permission') || l.includes(KEY)).length, 0);
    });
  });
});
