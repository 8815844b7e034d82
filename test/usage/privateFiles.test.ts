import assert from 'node:assert/strict';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { lockDataDir } from '../../src/local/dataDirFiles.js';
import { createUsageSpool } from '../../src/usage/usageSpool.js';
import { tempDir } from '../support/tempDir.js';

const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

/**
 * What the gateway writes names organizations, keys and routes: whatever the process's umask
 * (here the usual 022, which leaves others read access to what asks for none), its folders are
 * 0700 and its files 0600.
 */
describe('files the gateway writes', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let umask: number;
  beforeEach(async () => {
    dir = await tempDir('private-files-');
    umask = process.umask(0o022);
  });
  afterEach(async () => {
    process.umask(umask);
    await dir.remove();
  });

  it('spools usage into a folder only its owner can open, in files only its owner can read', async () => {
    const spoolDir = join(dir.path, 'usage-spool', 'nested');
    const event = {
      id: 'e1',
      keyId: 'key_a',
      organizationId: 'org_a',
      route: '/v1/api/keywords',
      at: '2026-11-21T12:00:00.000Z',
    };
    await createUsageSpool(spoolDir).write([event]);
    assert.equal(await modeOf(join(dir.path, 'usage-spool')), 0o700);
    assert.equal(await modeOf(spoolDir), 0o700);
    const files = await readdir(spoolDir);
    assert.equal(files.length, 1);
    assert.deepEqual(await Promise.all(files.map((file) => modeOf(join(spoolDir, file)))), [0o600]);
  });

  it('creates the local data folder only its owner can open', async () => {
    const dataDir = join(dir.path, 'local');
    const lock = await lockDataDir(dataDir);
    try {
      assert.equal(await modeOf(dataDir), 0o700);
      for (const file of await readdir(dataDir)) assert.equal(await modeOf(join(dataDir, file)), 0o600, file);
    } finally {
      await lock.release();
    }
  });
});
