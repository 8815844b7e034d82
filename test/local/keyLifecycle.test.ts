import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { keyHashOf, toWellFormedKey } from '../../src/auth/keyFormat.js';
import {
  createKeyCall,
  LocalKeyServiceFixture,
  listKeysCall,
  OWNER,
  revokeKeyCall,
  verifyCall,
} from './keyServiceHttp.js';

const START = '2026-11-21T12:00:00.000Z';
const DAY = 86_400_000;

describe('local key service: key management (spec 3.1 and 5.1)', () => {
  const ks = new LocalKeyServiceFixture('local-keys-', START);

  ks.useHooks();

  describe('who may manage keys', () => {
    it('refuses an actor without manage_api_keys with 403 forbidden on create, list and revoke', async () => {
      const noPermission = { 'x-actor-id': 'usr_7', 'x-actor-permissions': 'billing,manage_members' };
      const created = await createKeyCall(ks.service, 'org_demo', { name: 'x', permissions: ['read'] }, noPermission);
      assert.equal(created.status, 403);
      assert.deepEqual(created.body, { error: 'forbidden' });
      assert.equal((await listKeysCall(ks.service, 'org_demo', noPermission)).status, 403);
      const revoked = await revokeKeyCall(ks.service, 'org_demo', 'key_LOCALDEMO00000000000000001', noPermission);
      assert.deepEqual([revoked.status, revoked.body], [403, { error: 'forbidden' }]);
      // The demo key is untouched.
      assert.equal((await verifyCall(ks.service, keyHashOf(ks.service.demoKey))).body.key.revokedAt, null);
    });

    it('refuses an actor without an id, and one whose permission only resembles manage_api_keys', async () => {
      const noId = await createKeyCall(
        ks.service,
        'org_demo',
        { name: 'x', permissions: ['read'] },
        {
          'x-actor-permissions': 'manage_api_keys',
        },
      );
      assert.equal(noId.status, 403);
      const lookAlike = await createKeyCall(
        ks.service,
        'org_demo',
        { name: 'x', permissions: ['read'] },
        {
          'x-actor-id': 'usr_1',
          'x-actor-permissions': 'manage_api_keys_readonly',
        },
      );
      assert.equal(lookAlike.status, 403);
    });

    it('accepts manage_api_keys anywhere in the comma-separated list, spaces allowed', async () => {
      const created = await createKeyCall(
        ks.service,
        'org_demo',
        { name: 'spaced', permissions: ['read'] },
        {
          'x-actor-id': 'usr_8',
          'x-actor-permissions': 'billing, manage_api_keys',
        },
      );
      assert.equal(created.status, 201);
      assert.equal(created.body.key.createdBy, 'usr_8');
    });

    it('answers 404 not_found for an unknown organization, but 403 first to an actor without the permission', async () => {
      const created = await createKeyCall(ks.service, 'org_nope', { name: 'x', permissions: ['read'] });
      assert.deepEqual([created.status, created.body], [404, { error: 'not_found' }]);
      assert.deepEqual((await listKeysCall(ks.service, 'org_nope')).body, { error: 'not_found' });
      const forbidden = await listKeysCall(ks.service, 'org_nope', {
        'x-actor-id': 'usr_7',
        'x-actor-permissions': '',
      });
      assert.equal(forbidden.status, 403);
    });
  });

  describe('create', () => {
    it('returns the plaintext once, in the key format, with the record the contract shows', async () => {
      const created = await createKeyCall(ks.service, 'org_demo', { name: 'warehouse export', permissions: ['read'] });
      assert.equal(created.status, 201);
      const { key, plaintext } = created.body;
      assert.ok(toWellFormedKey(plaintext), plaintext);
      assert.equal(plaintext.length, 42);
      assert.deepEqual(Object.keys(key).sort(), [
        'createdAt',
        'createdBy',
        'expiresAt',
        'id',
        'lastUsedAt',
        'name',
        'organizationId',
        'permissions',
        'prefix',
        'revokedAt',
        'revokedBy',
      ]);
      assert.match(key.id, /^key_[0-9A-Z]{26}$/);
      assert.deepEqual(
        { ...key, id: 'id' },
        {
          id: 'id',
          organizationId: 'org_demo',
          name: 'warehouse export',
          prefix: plaintext.slice(0, 12),
          permissions: ['read'],
          createdAt: START,
          createdBy: 'usr_19',
          expiresAt: new Date(Date.parse(START) + 365 * DAY).toISOString(),
          revokedAt: null,
          revokedBy: null,
          lastUsedAt: null,
        },
      );

      // Nowhere else: not in the list, not in verify, and the data file holds only the hash.
      const list = await listKeysCall(ks.service, 'org_demo');
      assert.ok(!list.text.includes(plaintext));
      assert.ok(!list.text.includes(plaintext.slice(4)));
      const verified = await verifyCall(ks.service, keyHashOf(plaintext));
      assert.equal(verified.status, 200);
      assert.equal(verified.body.key.id, key.id);
      assert.ok(!verified.text.includes(plaintext));
      const onDisk = await readFile(ks.service.dataFile, 'utf8');
      assert.ok(!onDisk.includes(plaintext.slice(4)), 'the data file must not hold the plaintext');
      assert.ok(!onDisk.includes(ks.service.demoKey.slice(4)), 'nor the demo plaintext');
      assert.ok(onDisk.includes(`"keyHash": "${keyHashOf(plaintext)}"`));
    });

    it('keeps the key (as a hash) across a restart of the service', async () => {
      const created = await createKeyCall(ks.service, 'org_demo', { name: 'durable', permissions: ['read', 'audit'] });
      await ks.restart();
      const verified = await verifyCall(ks.service, keyHashOf(created.body.plaintext));
      assert.equal(verified.status, 200);
      assert.deepEqual(verified.body.key, created.body.key);
    });

    it('expires 365 days after creation by default and accepts any time after now up to 730 days', async () => {
      const at = (ms: number) => new Date(Date.parse(START) + ms).toISOString();
      const exactly730 = await createKeyCall(ks.service, 'org_demo', {
        name: 'max',
        permissions: ['read'],
        expiresAt: at(730 * DAY),
      });
      assert.equal(exactly730.status, 201);
      assert.equal(exactly730.body.key.expiresAt, at(730 * DAY));
      const oneSecond = await createKeyCall(ks.service, 'org_demo', {
        name: 'short',
        permissions: ['read'],
        expiresAt: at(1000),
      });
      assert.equal(oneSecond.body.key.expiresAt, at(1000));
      const withOffset = await createKeyCall(ks.service, 'org_demo', {
        name: 'offset',
        permissions: ['read'],
        expiresAt: '2027-01-10T10:00:00+01:00',
      });
      assert.equal(withOffset.body.key.expiresAt, '2027-01-10T09:00:00.000Z');
      const nullExpiry = await createKeyCall(ks.service, 'org_demo', {
        name: 'default',
        permissions: ['read'],
        expiresAt: null,
      });
      assert.equal(nullExpiry.body.key.expiresAt, at(365 * DAY));
    });

    it('refuses an expiry that is not after now, beyond 730 days (by one second), or not a time', async () => {
      const at = (ms: number) => new Date(Date.parse(START) + ms).toISOString();
      for (const expiresAt of [at(730 * DAY + 1000), at(0), at(-1000), 'next year', '2027-02-30T00:00:00Z', 42]) {
        const answer = await createKeyCall(ks.service, 'org_demo', {
          name: 'bad expiry',
          permissions: ['read'],
          expiresAt,
        });
        assert.deepEqual([answer.status, answer.body], [400, { error: 'invalid_expiry' }], String(expiresAt));
      }
    });

    it('refuses a name that is empty or longer than 100 characters, and permissions that are not strings', async () => {
      const bodies: unknown[] = [
        { name: '', permissions: ['read'] },
        { name: '   ', permissions: ['read'] },
        { name: 'x'.repeat(101), permissions: ['read'] },
        { permissions: ['read'] },
        { name: 'ok' },
        { name: 'ok', permissions: 'read' },
        { name: 'ok', permissions: ['read', 7] },
        'not json',
      ];
      for (const body of bodies) {
        const answer = await createKeyCall(ks.service, 'org_demo', body);
        assert.deepEqual([answer.status, answer.body], [400, { error: 'invalid_request' }], JSON.stringify(body));
      }
      const hundred = await createKeyCall(ks.service, 'org_demo', { name: 'é'.repeat(100), permissions: [] });
      assert.equal(hundred.status, 201);
      assert.deepEqual(hundred.body.key.permissions, []);
    });

    it('allows 50 active keys per organization and refuses the 51st with 409 active_key_limit', async () => {
      // org_other starts with one active seeded key.
      const before = (await listKeysCall(ks.service, 'org_other')).body.keys;
      assert.equal(before.length, 1);
      const created: string[] = [];
      for (let i = 2; i <= 50; i++) {
        const answer = await createKeyCall(ks.service, 'org_other', { name: `key ${i}`, permissions: ['read'] });
        assert.equal(answer.status, 201, `key ${i}`);
        created.push(answer.body.key.id);
      }
      const fiftyFirst = await createKeyCall(ks.service, 'org_other', { name: 'key 51', permissions: ['read'] });
      assert.deepEqual([fiftyFirst.status, fiftyFirst.body], [409, { error: 'active_key_limit' }]);
      // Another organization is not affected.
      assert.equal(
        (await createKeyCall(ks.service, 'org_demo', { name: 'elsewhere', permissions: ['read'] })).status,
        201,
      );

      // A revoked key no longer counts...
      await revokeKeyCall(ks.service, 'org_other', created[0] ?? '');
      assert.equal(
        (await createKeyCall(ks.service, 'org_other', { name: 'replacement', permissions: ['read'] })).status,
        201,
      );
      assert.equal(
        (await createKeyCall(ks.service, 'org_other', { name: 'again 51', permissions: ['read'] })).status,
        409,
      );
    });

    it('does not count expired keys as active', async () => {
      const at = (ms: number) => new Date(ks.clock.now().getTime() + ms).toISOString();
      for (let i = 2; i <= 50; i++) {
        const expiresAt = i <= 3 ? at(DAY) : undefined;
        const answer = await createKeyCall(ks.service, 'org_other', {
          name: `k${i}`,
          permissions: ['read'],
          expiresAt,
        });
        assert.equal(answer.status, 201);
      }
      assert.equal((await createKeyCall(ks.service, 'org_other', { name: 'full', permissions: ['read'] })).status, 409);
      ks.clock.advance(DAY); // two keys expire exactly now
      assert.equal(
        (await createKeyCall(ks.service, 'org_other', { name: 'after expiry', permissions: ['read'] })).status,
        201,
      );
    });
  });

  describe('list', () => {
    it('lists every key of the organization newest first, revoked and expired ones included', async () => {
      const first = await createKeyCall(ks.service, 'org_starter', {
        name: 'first',
        permissions: ['read'],
        expiresAt: new Date(Date.parse(START) + DAY).toISOString(),
      });
      ks.clock.advance(60_000);
      const second = await createKeyCall(ks.service, 'org_starter', { name: 'second', permissions: ['write'] });
      ks.clock.advance(60_000);
      await revokeKeyCall(ks.service, 'org_starter', second.body.key.id);
      ks.clock.advance(2 * DAY); // `first` has expired
      const list = await listKeysCall(ks.service, 'org_starter');
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.body.keys.map((k) => k.name),
        ['second', 'first', 'local starter'],
      );
      assert.equal(
        list.body.keys.every((k) => k.organizationId === 'org_starter'),
        true,
      );
      assert.equal(list.body.keys[1]?.id, first.body.key.id);
      assert.notEqual(list.body.keys[0]?.revokedAt, null);
    });
  });

  describe('revoke', () => {
    it('revokes immediately, keeps the record, and revoking again changes nothing', async () => {
      const created = await createKeyCall(ks.service, 'org_demo', { name: 'to revoke', permissions: ['read'] });
      const { key, plaintext } = created.body;
      ks.clock.advance(5_000);
      const revoked = await revokeKeyCall(ks.service, 'org_demo', key.id);
      assert.equal(revoked.status, 200);
      const revokedAt = new Date(Date.parse(START) + 5_000).toISOString();
      assert.deepEqual(revoked.body.key, { ...key, revokedAt, revokedBy: 'usr_19' });

      // Verify still finds it (the caller decides), now revoked.
      assert.equal((await verifyCall(ks.service, keyHashOf(plaintext))).body.key.revokedAt, revokedAt);

      ks.clock.advance(60_000);
      const again = await revokeKeyCall(ks.service, 'org_demo', key.id, {
        'x-actor-id': 'usr_20',
        'x-actor-permissions': 'manage_api_keys',
      });
      assert.equal(again.status, 200);
      assert.deepEqual(again.body.key, revoked.body.key, 'the second revoke returns the key as it is');

      const listed = (await listKeysCall(ks.service, 'org_demo')).body.keys.find((k) => k.id === key.id);
      assert.deepEqual(listed, revoked.body.key, 'the revoked key stays listed as the audit record');

      await ks.restart();
      const afterRestart = (await listKeysCall(ks.service, 'org_demo')).body.keys.find((k) => k.id === key.id);
      assert.deepEqual(afterRestart, revoked.body.key);
    });

    it('answers 404 for an unknown key and for a key of another organization', async () => {
      assert.deepEqual((await revokeKeyCall(ks.service, 'org_demo', 'key_nope')).body, { error: 'not_found' });
      const otherOrgsKey = 'key_LOCALOTHER0000000000000007';
      const answer = await revokeKeyCall(ks.service, 'org_demo', otherOrgsKey);
      assert.deepEqual([answer.status, answer.body], [404, { error: 'not_found' }]);
      const list = (await listKeysCall(ks.service, 'org_other', OWNER)).body.keys;
      assert.equal(list[0]?.revokedAt, null);
    });
  });
});
