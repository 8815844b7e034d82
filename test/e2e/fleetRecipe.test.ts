import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { cp, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { childEnvironment, freePort } from '../support/childEnvironment.js';
import { skipWithoutHaproxy } from '../support/haproxy.js';
import { skipWithoutRedis } from '../support/redisServer.js';
import { tempDir } from '../support/tempDir.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** The three blocks of deploy/README.md's "A fleet on one machine": start, fleet.cfg, rolling restart. */
function fleetRecipe(guide: string): { start: string; config: string; restart: string } {
  const section = guide.slice(
    guide.indexOf('### A fleet on one machine'),
    guide.indexOf('## Containers and Kubernetes'),
  );
  const blocks = [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((match) => ({
    lang: match[1],
    text: match[2] ?? '',
  }));
  const [start, config, restart] = blocks;
  assert.equal(blocks.length, 3, 'three blocks: the start, fleet.cfg and the rolling restart');
  assert.ok(start?.lang === 'sh' && restart?.lang === 'sh' && config !== undefined);
  assert.ok(config.text.startsWith('# fleet.cfg'));
  return { start: start.text, config: config.text, restart: restart.text };
}

/** Four ports in a row (prefix0…prefix3) nothing listens on, as the recipe numbers them. */
async function freeRow(avoid: string): Promise<string> {
  for (;;) {
    const prefix = String(2000 + Math.floor(Math.random() * 4000));
    if (prefix === avoid) continue;
    const free = await Promise.all(
      [0, 1, 2, 3].map(
        (digit) =>
          new Promise<boolean>((resolve) => {
            const probe = createServer();
            probe.once('error', () => resolve(false));
            probe.listen(Number(`${prefix}${digit}`), '127.0.0.1', () => probe.close(() => resolve(true)));
          }),
      ),
    );
    if (free.every(Boolean)) return prefix;
  }
}

/**
 * The README's ports (balancer 3000, instances 3001–3003, admin 3101–3103, Redis 6380) moved to
 * free ones, so that the test never meets another process's port; nothing else is changed.
 */
function onPorts(text: string, ports: { publicRow: string; adminRow: string; redis: number }): string {
  return text
    .replace(/\b3([01])0(\d|\$\w+)/g, (_, row: string, rest: string) =>
      row === '0' ? `${ports.publicRow}${rest}` : `${ports.adminRow}${rest}`,
    )
    .replace(/\b6380\b/g, String(ports.redis));
}

/**
 * deploy/README.md's fleet on one machine, followed as written in one bash shell (as an operator
 * pastes it), on a copy of the repository's folder: upstreams, Redis, three instances, haproxy, the
 * curl; then its rolling restart under steady load through haproxy. Only the ports are moved, and
 * `npm ci && npm run build` is left out (the test runs on the built tree).
 */
describe('the one-machine fleet recipe of deploy/README.md, followed literally (real processes)', function () {
  this.timeout(240_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let shell: ChildProcess | undefined;
  let output = '';

  before(async function () {
    skipWithoutRedis(this);
    skipWithoutHaproxy(this);
    dir = await tempDir('fleet-recipe-');
    for (const entry of ['package.json', 'node_modules', 'dist', 'queries', 'tsconfig.json'])
      await symlink(join(REPO, entry), join(dir.path, entry));
    // A copy, not a link: `npm run upstreams` runs src/local/upstreamsCli.ts only as the main module,
    // which Node names by its real path.
    await cp(join(REPO, 'src'), join(dir.path, 'src'), { recursive: true });
  });
  after(async () => {
    // Everything the recipe started (no job control in a shell fed by a pipe): the shell's group.
    if (shell?.pid !== undefined) {
      try {
        process.kill(-shell.pid, 'SIGKILL');
      } catch {}
    }
    await dir?.remove();
  });

  /** Feeds `script` to the shell and waits until it has run it all. */
  async function paste(script: string, withinMs: number): Promise<void> {
    const marker = `recipe-step-done-${Math.random().toString(36).slice(2)}`;
    shell?.stdin?.write(`${script}\necho ${marker}\n`);
    const deadline = Date.now() + withinMs;
    while (!output.includes(marker)) {
      if (Date.now() > deadline) throw new Error(`the recipe did not finish in time:\n${output.slice(-3000)}`);
      if (shell?.exitCode !== null) throw new Error(`the shell ended:\n${output.slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('starts the fleet, answers the curl, and restarts every instance in turn with 0 client errors and 0 haproxy pages', async () => {
    const publicRow = await freeRow('');
    const ports = { publicRow, adminRow: await freeRow(publicRow), redis: await freePort() };
    const recipe = fleetRecipe(await readFile(join(REPO, 'deploy/README.md'), 'utf8'));
    const start = onPorts(recipe.start, ports)
      .split('\n')
      .filter((line) => !line.startsWith('npm ci'))
      .join('\n');
    const fleetCfg = onPorts(recipe.config, ports);
    assert.match(fleetCfg, new RegExp(`bind 127\\.0\\.0\\.1:${publicRow}0\\n`));
    await writeFile(join(dir.path, 'fleet.cfg'), fleetCfg);

    shell = spawn('bash', [], {
      cwd: dir.path,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      // Debian's haproxy is in /usr/sbin; the embedded key service's data in the test's folder.
      env: childEnvironment({
        PATH: `${process.env.PATH ?? '/usr/bin:/bin'}:/usr/sbin`,
        LOCAL_DATA_DIR: join(dir.path, 'data', 'local'),
      }),
    });
    shell.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
    shell.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));

    await paste(start, 90_000);
    assert.match(output, /"keywords":\[\{"keyword"/, `the curl through haproxy answered the keywords: ${output}`);
    const key = /^DEMO_KEY=(\S+)$/m.exec(await readFile(join(dir.path, 'upstreams.env'), 'utf8'))?.[1] ?? '';
    const pids = async () =>
      Promise.all([1, 2, 3].map(async (i) => (await readFile(join(dir.path, `gateway-${i}.pid`), 'utf8')).trim()));
    const before = await pids();

    // Steady load through haproxy while the recipe's rolling restart runs: about 4 requests a second,
    // well under the default request limit (600 a minute) of the one organization the demo key has.
    const balancer = `http://127.0.0.1:${publicRow}0`;
    const statuses = new Map<number, number>();
    const notGateway: string[] = [];
    let stopped = false;
    const client = async (n: number) => {
      for (let i = 0; !stopped; i++) {
        try {
          const res = await fetch(`${balancer}/v1/api/keywords?site=acme.com&limit=${1 + ((n + i) % 20)}`, {
            headers: { authorization: `Bearer ${key}` },
          });
          const body = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (!(res.headers.get('content-type') ?? '').startsWith('application/json'))
            notGateway.push(`${res.status} ${body.slice(0, 80)}`);
        } catch (err: unknown) {
          notGateway.push(`connection: ${String(err)}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    const clients = [0, 1].map(client);
    try {
      await paste(onPorts(recipe.restart, ports), 150_000);
    } finally {
      stopped = true;
      await Promise.all(clients);
    }
    console.log(`      rolling restart: ${JSON.stringify(Object.fromEntries(statuses))}, others: ${notGateway.length}`);
    assert.deepEqual(notGateway, [], 'no haproxy page, no failed connection');
    assert.deepEqual([...statuses.keys()], [200], 'every answer a 200');
    assert.ok((statuses.get(200) ?? 0) > 50, 'traffic flowed throughout');
    const after = await pids();
    for (const [i, pid] of after.entries()) assert.notEqual(pid, before[i], `instance ${i + 1} was replaced`);
    assert.doesNotMatch(output, /already in use/, 'no replacement met a busy port');

    // Each instance's stdout (its log file): only JSON lines, the old processes' and the new ones'.
    for (const i of [1, 2, 3]) {
      const lines = (await readFile(join(dir.path, `gateway-${i}.log`), 'utf8')).split('\n').filter(Boolean);
      assert.ok(lines.length >= 2, `gateway-${i}.log`);
      for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), `gateway-${i}.log: ${line}`);
    }

    // Every file the recipe wrote is one git ignores (the links and the copy of src/ are the test's).
    const written: string[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true })) {
        if (entry.isSymbolicLink() || (folder === dir.path && entry.name === 'src')) continue;
        const path = join(folder, entry.name);
        if (entry.isDirectory()) await walk(path);
        else written.push(relative(dir.path, path));
      }
    };
    await walk(dir.path);
    for (const expected of ['upstreams.env', 'fleet.cfg', 'gateway-1.log', 'gateway-1.pid', 'redis.log'])
      assert.ok(written.includes(expected), expected);
    const ignored = await run('git', ['check-ignore', '--no-index', ...written], { cwd: REPO }).then(
      ({ stdout }) => stdout.split('\n').filter(Boolean),
      (): string[] => [],
    );
    assert.deepEqual(
      written.filter((path) => !ignored.includes(path)),
      [],
      'files the recipe writes that git would show',
    );
  });
});
