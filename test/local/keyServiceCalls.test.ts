import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { keyHashOf } from '../../src/auth/keyFormat.js';
import { DataDirBusy } from '../../src/local/dataDirFiles.js';
import { DataFileInvalid } from '../../src/local/keyStore.js';
import { startLocalKeyService } from '../../src/local/localKeyService.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { callKeyService, LocalKeyServiceFixture, verifyCall } from './keyServiceHttp.js';

const START = '2026-11-21T12:00:00.000Z';

function usageEvent(organizationId = 'org_demo', keyId = 'key_LOCALDEMO00000000000000001') {
  return { id: randomUUID(), keyId, organizationId, route: '/v1/api/keywords', at: '2026-11-21T12:00:00+01:00' };
}

describe('local key service: verify, usage and the service token', () => {
  const ks = new LocalKeyServiceFixture('local-keysvc-', START);

  ks.useHooks();

  it('answers 401 with no body to a missing or wrong service token, on every call', async () => {
    const calls: Array<[string, string]> = [
      ['POST', '/v1/keys/verify'],
      ['POST', '/v1/usage'],
      ['GET', '/v1/events'],
      ['GET', '/v1/organizations/org_demo/keys'],
      ['POST', '/v1/organizations/org_demo/keys'],
      ['POST', '/v1/organizations/org_demo/keys/key_x/revoke'],
      ['GET', '/nowhere'],
    ];
    for (const [method, path] of calls) {
      for (const token of [null, 'wrong-token', `${ks.service.token}x`]) {
        const answer = await callKeyService(ks.service, method, path, {
          token,
          body: method === 'POST' ? {} : undefined,
        });
        assert.equal(answer.status, 401, `${method} ${path} with ${token}`);
        assert.equal(answer.text, '');
      }
    }
  });

  describe('POST /v1/keys/verify', () => {
    it('answers the key and its organization with the usage of the current month', async () => {
      const answer = await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.demo));
      assert.equal(answer.status, 200);
      assert.equal(answer.body.key.id, 'key_LOCALDEMO00000000000000001');
      assert.equal(answer.body.key.prefix, LOCAL_KEYS.demo.slice(0, 12));
      assert.deepEqual(answer.body.key.permissions, ['read']);
      assert.deepEqual(answer.body.organization, {
        id: 'org_demo',
        plan: 'pro',
        usage: {
          periodStart: '2026-11-01T00:00:00.000Z',
          periodEnd: '2026-12-01T00:00:00.000Z',
          used: 48_210,
          ceiling: 5_000_000,
        },
      });
      assert.ok(!('keyHash' in answer.body.key));
    });

    it('answers expired and revoked keys too, and the seeded plans and ceilings', async () => {
      const expired = await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.demoExpired));
      assert.ok(Date.parse(expired.body.key.expiresAt) < Date.parse(START));
      const revoked = await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.demoRevoked));
      assert.notEqual(revoked.body.key.revokedAt, null);
      assert.deepEqual((await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.demoWriteOnly))).body.key.permissions, [
        'write',
      ]);
      assert.equal((await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.starter))).body.organization.plan, 'starter');
      assert.equal((await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.legacy))).body.organization.plan, 'legacy_team');
      const capped = (await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.capped))).body.organization;
      assert.ok(
        capped.usage.ceiling !== null && capped.usage.used >= capped.usage.ceiling,
        'org_capped is at its ceiling',
      );
      assert.equal((await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.other))).body.organization.usage.ceiling, null);
    });

    it('answers 404 unknown_key for an unknown hash and 400 invalid_request for another form', async () => {
      const unknown = await verifyCall(ks.service, keyHashOf('atl_nothing'));
      assert.deepEqual([unknown.status, unknown.body], [404, { error: 'unknown_key' }]);
      for (const keyHash of [keyHashOf(LOCAL_KEYS.demo).toUpperCase(), 'abc', 42, undefined]) {
        const answer = await verifyCall(ks.service, keyHash);
        assert.deepEqual([answer.status, answer.body], [400, { error: 'invalid_request' }], String(keyHash));
      }
      const notJson = await callKeyService(ks.service, 'POST', '/v1/keys/verify', { body: '{oops' });
      assert.equal(notJson.status, 400);
    });

    it('answers a body over 1 MB, an unknown path and another method in the same error shape, never a 500', async () => {
      const huge = await callKeyService(ks.service, 'POST', '/v1/keys/verify', {
        body: { keyHash: 'a'.repeat(1_100_000) },
      });
      assert.deepEqual([huge.status, huge.body], [413, { error: 'invalid_request' }]);
      const nowhere = await callKeyService(ks.service, 'GET', '/v1/nowhere');
      assert.deepEqual([nowhere.status, nowhere.body], [404, { error: 'not_found' }]);
      const response = await fetch(`${ks.service.url}/v1/keys/verify`, {
        headers: { authorization: `Bearer ${ks.service.token}` },
      });
      assert.deepEqual([response.status, await response.json()], [405, { error: 'method_not_allowed' }]);
      assert.equal(response.headers.get('allow'), 'POST');
      const concurrent = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          verifyCall(ks.service, i % 2 === 0 ? keyHashOf(LOCAL_KEYS.demo) : `${i}`),
        ),
      );
      assert.deepEqual(new Set(concurrent.map((answer) => answer.status)), new Set([200, 400]));
    });
  });

  describe('POST /v1/usage', () => {
    const used = async (key: string = LOCAL_KEYS.demo) =>
      (await verifyCall(ks.service, keyHashOf(key))).body.organization.usage.used;

    it('counts each event once, in the same call or a later one', async () => {
      const a = usageEvent();
      const b = usageEvent();
      const first = await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [a, b, a] } });
      assert.deepEqual([first.status, first.body], [200, { accepted: 2, duplicates: 1 }]);
      const again = await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [b, usageEvent(), a] } });
      assert.deepEqual(again.body, { accepted: 1, duplicates: 2 });
      assert.equal(await used(), 48_210 + 3);
      // Upper-case ids are the same UUIDs.
      const upper = await callKeyService(ks.service, 'POST', '/v1/usage', {
        body: { events: [{ ...a, id: a.id.toUpperCase() }] },
      });
      assert.deepEqual(upper.body, { accepted: 0, duplicates: 1 });
    });

    it('counts toward the event organization only and records lastUsedAt', async () => {
      await callKeyService(ks.service, 'POST', '/v1/usage', {
        body: { events: [usageEvent('org_starter', 'key_LOCALSTARTER00000000000005')] },
      });
      assert.equal(await used(LOCAL_KEYS.starter), 121);
      assert.equal(await used(), 48_210);
      const key = (await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.starter))).body.key;
      assert.equal(key.lastUsedAt, '2026-11-21T11:00:00.000Z');
    });

    it('refuses a call of another form with 400 and counts nothing of it', async () => {
      const valid = usageEvent();
      const bad: unknown[] = [
        { events: [] },
        { events: Array.from({ length: 1001 }, () => usageEvent()) },
        { events: [valid, { ...usageEvent(), id: 'not-a-uuid' }] },
        { events: [valid, { ...usageEvent(), at: 'yesterday' }] },
        { events: [valid, { ...usageEvent(), route: 7 }] },
        { events: [valid, { ...usageEvent(), keyId: '' }] },
        { events: valid },
        {},
      ];
      for (const body of bad) {
        const answer = await callKeyService(ks.service, 'POST', '/v1/usage', { body });
        assert.deepEqual([answer.status, answer.body], [400, { error: 'invalid_request' }]);
      }
      assert.equal(await used(), 48_210);
      // Nothing of the refused calls was remembered either: the valid event still counts.
      assert.deepEqual((await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [valid] } })).body, {
        accepted: 1,
        duplicates: 0,
      });
    });

    it('accepts 1000 events in one call', async () => {
      const events = Array.from({ length: 1000 }, () => usageEvent());
      const answer = await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events } });
      assert.deepEqual(answer.body, { accepted: 1000, duplicates: 0 });
    });

    it('keeps counts and known event ids across a restart', async () => {
      const event = usageEvent();
      await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [event] } });
      await ks.restart();
      assert.equal(await used(), 48_211);
      const again = await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [event] } });
      assert.deepEqual(again.body, { accepted: 0, duplicates: 1 });
    });

    it('starts a new period each calendar month (UTC) from the organization baseline', async () => {
      await callKeyService(ks.service, 'POST', '/v1/usage', { body: { events: [usageEvent()] } });
      ks.clock.set('2026-12-01T00:00:00.000Z');
      const organization = (await verifyCall(ks.service, keyHashOf(LOCAL_KEYS.demo))).body.organization;
      assert.deepEqual(organization.usage, {
        periodStart: '2026-12-01T00:00:00.000Z',
        periodEnd: '2027-01-01T00:00:00.000Z',
        used: 48_210,
        ceiling: 5_000_000,
      });
    });
  });

  describe('the data directory', () => {
    it('refuses a second service on the same data directory', async () => {
      await assert.rejects(startLocalKeyService({ dataDir: ks.dir.path, announce: false }), (err: unknown) => {
        return err instanceof DataDirBusy && /another local key service/.test(err.message);
      });
    });

    it('refuses a data file it cannot read, saying which file', async () => {
      await ks.service.close();
      await writeFile(ks.service.dataFile, '{"version": 1, "organizations": "nope"}');
      await assert.rejects(startLocalKeyService({ dataDir: ks.dir.path, announce: false }), (err: unknown) => {
        return err instanceof DataFileInvalid && err.message.includes(join(ks.dir.path, 'key-service.json'));
      });
      // afterEach closes a running service: give it one on a fresh sub-directory.
      ks.service = await startLocalKeyService({ dataDir: join(ks.dir.path, 'fresh'), announce: false });
    });
  });
});
