import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { keyHashOf } from '../../src/auth/keyFormat.js';
import { RankingsDocument } from '../../src/generated/graphql.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { tempDir } from '../support/tempDir.js';
import { startUpstreamsProcess, type UpstreamsProcess } from '../support/upstreamsProcess.js';
import { verifyCall } from './keyServiceHttp.js';

describe('npm run upstreams (a real process)', function () {
  this.timeout(60_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let upstreams: UpstreamsProcess | undefined;

  before(async () => {
    dir = await tempDir('upstreams-cli-');
  });
  after(async () => {
    await upstreams?.group.destroy();
    await dir?.remove();
  });

  it('prints the four variables in dotenv form and the demo key first, serves both upstreams, stops on SIGTERM', async () => {
    upstreams = await startUpstreamsProcess(dir.path);
    const lines = upstreams.group.stdout().trimEnd().split('\n');
    assert.deepEqual(
      lines.slice(0, 4).map((line) => line.split('=')[0]),
      ['PLATFORM_GRAPHQL_URL', 'PLATFORM_TOKEN', 'KEY_SERVICE_URL', 'KEY_SERVICE_TOKEN'],
    );
    assert.ok(
      lines.every((line) => /^[A-Z_]+=\S+$/.test(line) || line.startsWith('# ')),
      lines.join('\n'),
    );
    const env = upstreams.gatewayEnv;
    assert.match(upstreams.demoKey, /^atl_[0-9A-Za-z]{38}$/);

    const keyService = { url: env.KEY_SERVICE_URL ?? '', token: env.KEY_SERVICE_TOKEN ?? '' };
    const verified = await verifyCall(keyService, keyHashOf(upstreams.demoKey));
    assert.equal(verified.status, 200);
    const platform = createPlatformClient({
      url: env.PLATFORM_GRAPHQL_URL ?? '',
      token: env.PLATFORM_TOKEN ?? '',
      timeoutMs: 5000,
    });
    const answer = await platform.request(RankingsDocument, {
      organizationId: 'org_demo',
      site: 'acme.com',
      startDate: '2026-11-14',
    });
    assert.ok(answer.organization?.siteLookup[0]?.latest, 'the seed data');

    upstreams.group.signalGroup('SIGTERM');
    assert.deepEqual(await upstreams.group.exitWithin(10_000), { code: 0, signal: null });
    // The key service let go of its data directory.
    await assert.rejects(access(join(dir.path, 'key-service.lock')));
  });
});
