import assert from 'node:assert/strict';
import { keyPrefixOf } from '../support/keys.js';
import { bearer, KEY, KEY_B, refusedWith, useKeyAuthenticator } from './keyAuthenticatorHarness.js';

describe('keyAuthenticator: who is let in, and how verifications are reused', () => {
  const t = useKeyAuthenticator();

  describe('key states (spec 3.1)', () => {
    it('lets an active key in as its own organization, named by prefix', async () => {
      t.service.answer(KEY, { key: { organizationId: 'org_7Hq2', id: 'key_1' } });
      const { usage, ...principal } = await t.authenticator.authenticate(bearer(KEY));
      assert.deepEqual(principal, { organizationId: 'org_7Hq2', keyId: 'key_1', keyPrefix: keyPrefixOf(KEY) });
      assert.ok(usage, "the principal carries its verification's usage, for admission");
      assert.equal(t.service.calls, 1);
    });
  });

  describe('verification cache', () => {
    it('verifies every request while not following the event stream', async () => {
      t.service.answer(KEY);
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      t.authenticator.start(); // started, but the stream is not open yet
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 3);
    });

    it('shares one key-service call between concurrent requests for the same key', async () => {
      t.service.answer(KEY);
      t.service.answer(KEY_B, { key: { organizationId: 'org_b' } });
      const release = t.service.hold();
      const requests = [
        t.authenticator.authenticate(bearer(KEY)),
        t.authenticator.authenticate(bearer(KEY)),
        t.authenticator.authenticate({ authorization: undefined, apiKeyHeader: KEY }),
        t.authenticator.authenticate(bearer(KEY_B)),
      ];
      release();
      const principals = await Promise.all(requests);
      assert.deepEqual(
        principals.map((p) => p.organizationId),
        ['org_a', 'org_a', 'org_a', 'org_b'],
      );
      assert.equal(t.service.calls, 2);
    });

    it('remembers an unknown hash briefly, with or without the stream, and forgets it on reset', async () => {
      t.authenticator.start();
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(t.service.calls, 1);
      t.nowMs += 10_001;
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(t.service.calls, 2);
      t.service.connect();
      t.service.emit({ type: 'reset' });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
      assert.equal(t.service.calls, 3);
    });

    it('re-verifies an organization with a ceiling once its entry is a few seconds old', async () => {
      t.service.answer(KEY, { usage: { used: 10, ceiling: 1000 } });
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      t.nowMs += 4_000;
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 1);
      // Meanwhile other gateways (or a flushed buffer) used the rest of the allowance.
      t.service.answer(KEY, { usage: { used: 900, ceiling: 1000 } });
      t.nowMs += 1_001;
      // Stale but far from the ceiling: served while it is refreshed in the background.
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 2);
      await new Promise((resolve) => setImmediate(resolve));
      t.service.answer(KEY, { usage: { used: 1000, ceiling: 1000 } });
      // The refreshed entry is 100 calls from the ceiling: freshness decides, so no stale answer.
      t.nowMs += 5_001;
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      assert.equal(t.service.calls, 3);
    });

    it('re-verifies on every request near the ceiling', async () => {
      t.service.answer(KEY, { usage: { used: 850, ceiling: 1000 } });
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 1);
      t.setPending('org_a', 50); // headroom 100: near
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 3);
      t.setPending('org_a', 150); // pending alone reaches the ceiling
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
    });

    it('refuses again at the ceiling without a verification, until the ceiling is raised or the period turns', async () => {
      t.service.answer(KEY, { usage: { used: 1000, ceiling: 1000 } });
      t.authenticator.start();
      t.service.connect();
      for (let i = 0; i < 50; i++) {
        await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      }
      t.nowMs += 30_000;
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      assert.equal(t.service.calls, 1, 'one verification for 51 refusals');
      // The ceiling raised: the key service announces it, and the next request is verified.
      t.service.answer(KEY, { usage: { used: 1000, ceiling: 2000 } });
      t.service.emit({ type: 'organization.updated', organizationId: 'org_a' });
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 2);
      // At the ceiling again, then the period turns: only the service knows the new count.
      t.service.answer(KEY, { usage: { used: 2000, ceiling: 2000 } });
      t.service.emit({ type: 'organization.updated', organizationId: 'org_a' });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      assert.equal(t.service.calls, 3);
      const periodEnd = new Date(t.nowMs + 1_000).toISOString();
      t.service.answer(KEY, { usage: { used: 2000, ceiling: 2000, periodEnd } });
      t.service.emit({ type: 'organization.updated', organizationId: 'org_a' });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      t.service.answer(KEY, { usage: { used: 0, ceiling: 2000 } });
      t.nowMs += 1_000;
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 5, 'the new period verified at its first request');
      // Without the event stream nothing is trusted: every refusal is verified.
      t.service.answer(KEY, { usage: { used: 2000, ceiling: 2000 } });
      t.service.drop();
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      assert.equal(t.service.calls, 7);
    });

    it('close() stops following and forgets what it cached', async () => {
      t.service.answer(KEY);
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      await t.authenticator.close();
      assert.equal(t.service.streamClosed, true);
      await t.authenticator.authenticate(bearer(KEY));
      assert.equal(t.service.calls, 2);
    });
  });
});
