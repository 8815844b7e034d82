import assert from 'node:assert/strict';
import { UpstreamError } from '../../src/errors.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import { withBadChecksum } from '../support/keys.js';
import { bearer, JWT, KEY, KEY_B, refusedWith, useKeyAuthenticator } from './keyAuthenticatorHarness.js';

describe('keyAuthenticator: refusals and key-service failures', () => {
  const t = useKeyAuthenticator();

  describe('refusals decided locally, without the key service', () => {
    it('refuses a malformed key and a bad checksum with 401 malformed_key', async () => {
      for (const text of [withBadChecksum(KEY), 'atl_short', KEY.slice(0, -1), `${KEY}x`, 'hello']) {
        await assert.rejects(t.authenticator.authenticate(bearer(text)), refusedWith(401, 'malformed_key'));
      }
      assert.equal(t.service.calls, 0);
    });

    it('refuses a JWT-shaped bearer with 403 not_an_api_key', async () => {
      await assert.rejects(t.authenticator.authenticate(bearer(JWT)), refusedWith(403, 'not_an_api_key'));
      await assert.rejects(
        t.authenticator.authenticate({ authorization: undefined, apiKeyHeader: JWT }),
        refusedWith(403, 'not_an_api_key'),
      );
      assert.equal(t.service.calls, 0);
    });

    it('refuses a missing key and two different keys', async () => {
      await assert.rejects(
        t.authenticator.authenticate({ authorization: undefined, apiKeyHeader: undefined }),
        refusedWith(401, 'missing_key'),
      );
      await assert.rejects(
        t.authenticator.authenticate({ ...bearer(KEY), apiKeyHeader: KEY_B }),
        refusedWith(401, 'conflicting_credentials'),
      );
      assert.equal(t.service.calls, 0);
    });
  });

  describe('key states (spec 3.1)', () => {
    it('refuses an unknown key with 401 invalid_key', async () => {
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'invalid_key'));
    });

    it('refuses a key whose expiry is now or past with 401 expired_key, and lets it in a millisecond before', async () => {
      t.service.answer(KEY, { key: { expiresAt: FIXED_NOW.toISOString() } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      t.service.answer(KEY, { key: { expiresAt: '2026-01-01T00:00:00.000Z' } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(401, 'expired_key'));
      t.service.answer(KEY, { key: { expiresAt: new Date(FIXED_NOW.getTime() + 1).toISOString() } });
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
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
        t.service.answer(KEY, { key: { permissions } });
        if (allowed) assert.ok(await t.authenticator.authenticate(bearer(KEY)));
        else await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'missing_permission'));
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
        t.service.answer(KEY, { organization: { plan } });
        if (allowed) assert.ok(await t.authenticator.authenticate(bearer(KEY)));
        else await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'plan_not_eligible'));
      });
    }
  });

  describe('usage ceiling', () => {
    it('lets in below the ceiling and refuses at it (used >= ceiling)', async () => {
      t.service.answer(KEY, { usage: { used: 999, ceiling: 1000 } });
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
      t.service.answer(KEY, { usage: { used: 1000, ceiling: 1000 } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      t.service.answer(KEY, { usage: { used: 1200, ceiling: 1000 } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      t.service.answer(KEY, { usage: { used: 0, ceiling: 0 } });
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
    });

    it('counts calls served here but not yet reported', async () => {
      t.service.answer(KEY, { usage: { used: 990, ceiling: 1000 } });
      t.setPending('org_a', 9);
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
      t.setPending('org_a', 10);
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), refusedWith(403, 'usage_ceiling_reached'));
      t.setPending('org_b', 1000); // another organization's pending calls do not count
      t.setPending('org_a', 0);
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
    });

    it('has no ceiling when ceiling is null', async () => {
      t.service.answer(KEY, { usage: { used: 50_000_000, ceiling: null } });
      t.setPending('org_a', 1000);
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
    });
  });

  describe('key service failures', () => {
    it('passes the key service failure on (answered as 503), never a 401 and never a pass', async () => {
      t.service.answer(KEY);
      t.service.failure = new UpstreamError('key-service', 'timeout', 'verify: no answer in time');
      await assert.rejects(t.authenticator.authenticate(bearer(KEY)), (err: unknown) => err === t.service.failure);
    });

    it('a background refresh that fails serves the cached answer and logs its cause in one line, no stack', async () => {
      t.service.answer(KEY); // no ceiling: stale after the 60 s freshness, still served while refreshed
      t.authenticator.start();
      t.service.connect();
      await t.authenticator.authenticate(bearer(KEY));
      t.service.failure = new UpstreamError('key-service', 'unreachable', 'verify: connection refused');
      t.nowMs += 61_000;
      const principal = await t.authenticator.authenticate(bearer(KEY));
      assert.equal(principal.organizationId, 'org_a');
      await new Promise((resolve) => setImmediate(resolve));
      const failed = t.logLines.filter((line) => line.includes('background verification failed'));
      assert.equal(failed.length, 1);
      assert.match(failed[0] ?? '', /connection refused/);
      assert.doesNotMatch(failed[0] ?? '', /stack/);
    });
  });

  describe('verification cache', () => {
    it('shares a failure too, and does not remember it', async () => {
      t.service.answer(KEY);
      t.service.failure = new UpstreamError('key-service', 'bad_answer', 'verify: status 500');
      const release = t.service.hold();
      const requests = [t.authenticator.authenticate(bearer(KEY)), t.authenticator.authenticate(bearer(KEY))];
      release();
      for (const request of requests) await assert.rejects(request, UpstreamError);
      assert.equal(t.service.calls, 1);
      t.service.failure = undefined;
      assert.ok(await t.authenticator.authenticate(bearer(KEY)));
      assert.equal(t.service.calls, 2);
    });
  });
});
