import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { keyHashOf } from '../../src/auth/keyFormat.js';
import { RankingsDocument } from '../../src/generated/graphql.js';
import { startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { tempDir } from '../support/tempDir.js';
import { revokeKeyCall, verifyCall } from './keyServiceHttp.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('startLocalUpstreams', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;

  beforeEach(async () => {
    dir = await tempDir('local-upstreams-');
  });
  afterEach(async () => {
    await dir.remove();
  });

  it('starts both upstreams on loopback with random tokens, a working demo key and seed data of `now`', async () => {
    const upstreams = await startLocalUpstreams({ dataDir: dir.path, now: () => NOW });
    try {
      assert.match(upstreams.platform.url, /^http:\/\/127\.0\.0\.1:\d+\/graphql$/);
      assert.match(upstreams.keyService.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.notEqual(upstreams.platform.token, upstreams.keyService.token);
      assert.equal(upstreams.demoKeyActive, true);

      const verified = await verifyCall(upstreams.keyService, keyHashOf(upstreams.demoKey));
      assert.equal(verified.status, 200);
      assert.deepEqual([verified.body.organization.id, verified.body.organization.plan], ['org_demo', 'pro']);

      const platform = createPlatformClient({ ...upstreams.platform, timeoutMs: 5000 });
      const answer = await platform.request(RankingsDocument, {
        organizationId: 'org_demo',
        site: 'acme.com',
        startDate: '2026-11-14',
      });
      assert.equal(answer.organization?.siteLookup[0]?.latest?.date, '2026-11-21');
      assert.ok(await exists(join(dir.path, 'key-service.endpoint.json')), 'announced for npm run keys');
    } finally {
      await upstreams.close();
      await upstreams.close(); // closing twice is harmless
    }
    assert.equal(await exists(join(dir.path, 'key-service.endpoint.json')), false);
    assert.ok(await exists(join(dir.path, 'key-service.json')));
  });

  it('reuses the data directory on the next start, and reports a demo key that was revoked', async () => {
    const first = await startLocalUpstreams({ dataDir: dir.path });
    const firstTokens = [first.platform.token, first.keyService.token];
    await revokeKeyCall(first.keyService, 'org_demo', 'key_LOCALDEMO00000000000000001');
    await first.close();

    const second = await startLocalUpstreams({ dataDir: dir.path });
    try {
      assert.equal(second.demoKeyActive, false);
      assert.notDeepEqual([second.platform.token, second.keyService.token], firstTokens);
      const verified = await verifyCall(second.keyService, keyHashOf(second.demoKey));
      assert.notEqual(verified.body.key.revokedAt, null, 'a revoked key is never reactivated');
    } finally {
      await second.close();
    }
  });
});
