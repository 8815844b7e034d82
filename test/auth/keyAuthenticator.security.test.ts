import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { keyHashOf, keyPrefixOf } from '../support/keys.js';
import { bearer, KEY, KEY_B, refusedWith, useKeyAuthenticator } from './keyAuthenticatorHarness.js';

describe('keyAuthenticator: revocation, organizations kept apart, keys kept out of logs', () => {
  const t = useKeyAuthenticator();

  describe('key states (spec 3.1)', () => {
    it('refuses a revoked key exactly as an unknown one (and a revoked, expired one too)', async () => {
      const unknown = await t.authenticator.authenticate(bearer(KEY_B)).catch((err: unknown) => err);
      t.service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      const revoked = await t.authenticator.authenticate(bearer(KEY)).catch((err: unknown) => err);
      t.service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', expiresAt: '2026-01-01T00:00:00.000Z' } });
      const revokedExpired = await t.authenticator.authenticate(bearer(KEY)).catch((err: unknown) => err);
      for (const err of [unknown, revoked, revokedExpired]) refusedWith(401, 'invalid_key')(err);
      const shape = (err: unknown) => {
        const e = err as ApiError;
        return { status: e.status, code: e.code, message: e.message, reason: e.reason, headers: e.headers };
      };
      assert.deepEqual(shape(revoked), shape(unknown));
      assert.deepEqual(shape(revokedExpired), shape(unknown));
    });

    it('keeps refusing a key revoked again (unchanged record): it is not reactivated', async () => {
      t.service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      t.service.answer(KEY, { key: { revokedAt: '2026-11-20T14:05:00.000Z', revokedBy: 'usr_19' } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
    });
  });

  describe('verification cache', () => {
    it('reuses a verification while the stream is open, and drops it on key.revoked', async () => {
      t.service.answer(KEY, { key: { id: 'key_1' } });
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 1);

      t.service.answer(KEY, { key: { id: 'key_1', revokedAt: '2026-11-21T12:00:00.000Z' } });
      t.service.emit({
        type: 'key.revoked',
        keyId: 'key_1',
        keyHash: keyHashOf(KEY),
        organizationId: 'org_a',
        revokedAt: '2026-11-21T12:00:00.000Z',
      });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(t.service.calls, 2);
      assert.ok(t.logLines.some((line) => line.includes('key revoked') && line.includes('key_1')));
    });

    it('drops only the updated organization on organization.updated', async () => {
      t.service.answer(KEY, { key: { organizationId: 'org_a' } });
      t.service.answer(KEY_B, { key: { organizationId: 'org_b' } });
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY_B));
      t.service.answer(KEY, { key: { organizationId: 'org_a' }, organization: { plan: 'starter' } });
      t.service.emit({ type: 'organization.updated', organizationId: 'org_a' });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'plan_not_eligible'));
      await t.authenticator.authenticate(bearer(KEY_B));
      assert.equal(t.service.calls, 3);
    });

    it('drops everything on reset, and on a stream drop stops caching until it is back', async () => {
      t.service.answer(KEY);
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      t.service.emit({ type: 'reset' });
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 2);

      t.service.drop();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 4);

      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 5);
    });

    it('never caches an answer that was on its way when a revocation arrived', async () => {
      t.service.answer(KEY, { key: { id: 'key_1' } });
      t.authenticator.start();
      t.service.connect();
      const release = t.service.hold();
      const first = t.authenticator.authenticate(bearer(KEY));
      // Once the verify is on its way (the ceiling's count is read first):
      await new Promise((resolve) => setImmediate(resolve));
      t.service.answer(KEY, { key: { id: 'key_1', revokedAt: '2026-11-21T12:00:00.000Z' } });
      t.service.emit({
        type: 'key.revoked',
        keyId: 'key_1',
        keyHash: keyHashOf(KEY),
        organizationId: 'org_a',
        revokedAt: '',
      });
      release();
      assert.ok(await first); // asked before the revocation
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(t.service.calls, 2);
    });

    it('keeps an organization without a ceiling for the cache TTL, and still sees its key expire', async () => {
      t.service.answer(KEY, { usage: { ceiling: null }, key: { expiresAt: new Date(t.nowMs + 30_000).toISOString() } });
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      t.nowMs += 20_000;
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 1);
      t.nowMs += 10_000; // the key's expiry, reached while its verification is cached
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      assert.equal(t.service.calls, 1);
      t.nowMs += 31_000; // past the 60 s TTL
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      assert.equal(t.service.calls, 2);
    });
  });

  describe('logs', () => {
    it('leave a refusal to the request line: the prefix is handed over, no line of its own', async () => {
      t.service.answer(KEY, { key: { permissions: ['write'] } });
      const told: string[] = [];
      await assert.rejects(
        t.authenticator.authenticate({ ...bearer(KEY), onKeyPrefix: (p) => told.push(p) }),
        ApiError,
      );
      assert.deepEqual(told, [keyPrefixOf(KEY)]);
      assert.equal(t.logLines.filter((l) => l.includes('missing_permission') || l.includes(KEY)).length, 0);
    });
  });
});
