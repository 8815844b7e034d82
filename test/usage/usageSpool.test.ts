import assert from 'node:assert/strict';
import { readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { UsageEvent } from '../../src/usage/usageEvent.js';
import { createUsageSpool } from '../../src/usage/usageSpool.js';
import { childEnvironment } from '../support/childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from '../support/processGroup.js';
import { tempDir } from '../support/tempDir.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LEASE_MS = 600;

const events = (prefix: string, count: number): UsageEvent[] =>
  Array.from({ length: count }, (_unused, i) => ({
    id: `${prefix}-${i}`,
    keyId: 'key_a',
    organizationId: 'org_a',
    route: '/v1/api/keywords',
    at: '2026-11-21T12:00:00.000Z',
  }));
const ids = (list: readonly UsageEvent[]) => list.map((event) => event.id).sort();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Instances on different hosts (or containers) sharing one spool folder, played by separate
 * processes: a claim is taken over only when its holder stopped renewing it, never by
 * what its process id says, and of instances claiming together each file goes to one.
 */
describe('usage spool shared by hosts', function () {
  this.timeout(30_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  const holders: ProcessGroup[] = [];

  beforeEach(async () => {
    dir = await tempDir('usage-spool-hosts-');
  });
  afterEach(async () => {
    await Promise.all(holders.splice(0).map((holder) => holder.destroy()));
    await dir.remove();
  });

  /** Another host: claims what the folder holds and keeps renewing; resolves with the ids it claimed. */
  const otherHost = async (): Promise<{ holder: ProcessGroup; claimed: string[] }> => {
    const holder = startProcessGroup(
      process.execPath,
      ['--import', 'tsx', 'test/usage/fixtures/spoolHolder.ts', dir.path, String(LEASE_MS)],
      { cwd: REPO_ROOT, env: childEnvironment({}) },
    );
    holders.push(holder);
    const line = (await holder.waitForOutput(/(\{"claimed".*\})\n/, 20_000))[1] ?? '{}';
    return { holder, claimed: (JSON.parse(line) as { claimed: string[] }).claimed.sort() };
  };

  it('leaves a claim its holder renews, and takes it over once the holder is killed and the lease lapsed', async () => {
    const written = events('b', 5);
    await createUsageSpool(dir.path, LEASE_MS).write(written);
    const { holder, claimed } = await otherHost();
    assert.deepEqual(claimed, ids(written));

    const here = createUsageSpool(dir.path, LEASE_MS);
    assert.deepEqual(await here.claim(), []);
    await sleep(3 * LEASE_MS);
    assert.deepEqual(await here.claim(), [], 'still renewed: not taken');

    holder.signalGroup('SIGKILL');
    await holder.exited;
    await sleep(2 * LEASE_MS);
    assert.deepEqual(ids(await here.claim()), ids(written), 'taken over, each event once');
    assert.deepEqual(await createUsageSpool(dir.path, LEASE_MS).claim(), [], 'and by no one else');
  });

  it('judges a claim by its renewal, not by the process id in its name (ids collide across hosts)', async () => {
    const staleOfLivePid = events('stale', 3);
    const freshOfUnknownPid = events('fresh', 4);
    const line = (list: UsageEvent[]) => `${list.map((event) => JSON.stringify(event)).join('\n')}\n`;
    // Left by a host that died, under a process id that runs here (this one's).
    const stale = join(dir.path, `usage-1-a.jsonl.claimed-${process.pid}`);
    await writeFile(stale, line(staleOfLivePid));
    const old = new Date(Date.now() - 10 * LEASE_MS);
    await utimes(stale, old, old);
    // Held just now by a live host, under a process id that runs nowhere here.
    await writeFile(join(dir.path, 'usage-2-b.jsonl.claimed-4194303'), line(freshOfUnknownPid));

    const here = createUsageSpool(dir.path, LEASE_MS);
    assert.deepEqual(ids(await here.claim()), ids(staleOfLivePid));
    here.safe(staleOfLivePid);
    await sleep(50);
    assert.deepEqual(await readdir(dir.path), ['usage-2-b.jsonl.claimed-4194303'], 'delivered files go');
  });

  it('of two hosts claiming one folder at once, each event goes to exactly one', async () => {
    const spool = createUsageSpool(dir.path, LEASE_MS);
    const written: UsageEvent[] = [];
    for (let file = 0; file < 20; file++) {
      const some = events(`f${file}`, 5);
      written.push(...some);
      await spool.write(some);
    }
    const [first, second] = await Promise.all([otherHost(), otherHost()]);
    const all = [...(first?.claimed ?? []), ...(second?.claimed ?? [])].sort();
    assert.deepEqual(all, ids(written));
  });
});
