import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SHUTDOWN_DELAY_SECONDS } from '../../src/config.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { childEnvironment, freePort } from '../support/childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from '../support/processGroup.js';
import { tempDir } from '../support/tempDir.js';
import { assertFailure, callGateway } from './gatewayCalls.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** A SIGTERM's path to the exit: the default SHUTDOWN_DELAY_SECONDS of serving while not ready, then the 10 s shutdown. */
const EXIT_WITHIN_MS = DEFAULT_SHUTDOWN_DELAY_SECONDS * 1000 + 10_000;
const ROUTES = ['/v1/api/rankings', '/v1/api/ai-visibility/summary', '/v1/api/keywords', '/v1/api/audit-issues'];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command to its end, with its output. */
function run(command: string, args: readonly string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(command, [...args], { cwd: REPO_ROOT, env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
      resolve({ code, stdout, stderr });
    });
  });
}

/** npm prints the script's banner first; the CLI's --json answer is the rest. */
function jsonAfterNpmBanner<T>(stdout: string): T {
  const start = stdout.search(/^[{[]/m);
  assert.ok(start >= 0, `no JSON in:\n${stdout}`);
  return JSON.parse(stdout.slice(start)) as T;
}

const README = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

/** The README's first command ("Run it"): `npm ci && npm start …`, and what follows `npm`. */
function readmeStart(): string[] {
  const block = /## Run it\n\n```sh\n([^\n]*)\n/.exec(README)?.[1] ?? '';
  const command = block.replace(/\s+#.*$/, '');
  assert.match(command, /^npm ci && npm start\b/, block);
  return command.replace(/^npm ci && npm /, '').split(/\s+/);
}

/** dist/ as `npm ci` leaves it (its prepare script builds): `npm start` builds nothing. */
let built: Promise<Run> | undefined;

/** `npm start` with no configuration but a free PORT and a temporary LOCAL_DATA_DIR; resolves once the banner is out. */
async function startNpmStart(dataDir: string): Promise<{ gateway: ProcessGroup; port: number; banner: string }> {
  built ??= run('npm', ['run', 'build'], childEnvironment());
  const build = await built;
  assert.equal(build.code, 0, build.stderr);
  const port = await freePort();
  const gateway = startProcessGroup('npm', readmeStart(), {
    cwd: REPO_ROOT,
    env: childEnvironment({ PORT: String(port), LOCAL_DATA_DIR: dataDir }),
  });
  // Allow a busy machine plenty of time.
  const banner = (
    await gateway.waitForOutput(/Gateway listening on [\s\S]*?Stop with Ctrl\+C\.\n/, 45_000, 'stderr')
  )[0];
  return { gateway, port, banner };
}

/** The gateway's JSON log lines among npm's and the banner's output. */
function logLinesOf(stdout: string): Array<{ msg: string; code?: number; url?: string }> {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; code?: number; url?: string });
}

/**
 * `npm ci && npm start` on a fresh clone, as the README says: no upstream, no Redis, no
 * configuration. Two things differ from a newcomer's terminal, on purpose: PORT is a free
 * port picked here (3000 may be taken on a CI machine), and LOCAL_DATA_DIR is a temporary
 * directory, so the repository's own .local is never touched. Every other gateway
 * variable is removed from the environment.
 */
describe('npm start, as the README says (real processes)', function () {
  this.timeout(60_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let port: number;
  let gateway: ProcessGroup;
  let banner: string;

  before(async () => {
    dir = await tempDir('e2e-npm-start-');
    ({ gateway, port, banner } = await startNpmStart(dir.path));
  });

  after(async () => {
    await gateway?.destroy();
    await dir?.remove();
  });

  it('prints where it listens, the demo key, and a curl line per route that answers 200 in the envelope', async () => {
    const url = /Gateway listening on (\S+)/.exec(banner)?.[1];
    assert.equal(url, `http://127.0.0.1:${port}`);
    // The gateway's stdout is for a log shipper: JSON lines only, npm adding none of its own.
    await gateway.waitForOutput(/"msg":"listening"/, 5000);
    const notJson = gateway
      .stdout()
      .split('\n')
      .filter((line) => line.trim() !== '')
      .filter((line) => {
        try {
          return typeof JSON.parse(line) !== 'object';
        } catch {
          return true;
        }
      });
    assert.deepEqual(notJson, []);
    assert.deepEqual(
      logLinesOf(gateway.stdout())
        .filter((line) => line.msg === 'listening')
        .map((line) => line.url),
      [url],
    );
    const demoKey = /Demo key \(organization org_demo, plan pro\):\n\s+(atl_[0-9A-Za-z]{38})\n/.exec(banner)?.[1];
    assert.ok(demoKey, banner);
    const curls = [...banner.matchAll(/^ {2}(curl -s -H 'Authorization: Bearer (atl_\w+)' '([^']+)')$/gm)];
    assert.deepEqual(
      curls.map((line) => new URL(line[3] ?? '').pathname),
      ROUTES,
    );

    for (const [, , key, target] of curls) {
      assert.equal(key, demoKey);
      const answer = await fetch(target ?? '', { headers: { authorization: `Bearer ${key}` } });
      assert.equal(answer.status, 200, target);
      const body = (await answer.json()) as { data: { site: string }; meta: unknown; errors: unknown };
      assert.deepEqual([body.data.site, body.meta, body.errors], ['acme.com', {}, []], target);
    }

    // npm started the gateway on the Node line running these tests (CI runs them on each supported one).
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.equal(/^nodejs_version_info\{version="([^"]+)"/m.exec(metrics)?.[1], process.version);

    // The printed line itself, as a newcomer pastes it (where curl is installed).
    const line = curls.find((c) => c[3]?.includes('/v1/api/keywords'))?.[1] ?? '';
    if (spawnSync('sh', ['-c', 'command -v curl']).status === 0) {
      const pasted = await run('sh', ['-c', line], childEnvironment());
      assert.equal(pasted.code, 0, pasted.stderr);
      const body = JSON.parse(pasted.stdout) as {
        data: { site: string; keywords: unknown[] };
        meta: unknown;
        errors: unknown;
      };
      assert.deepEqual([body.data.site, body.data.keywords.length, body.meta, body.errors], ['acme.com', 5, {}, []]);
    }
  });

  it("the README's first call works: its KEY is the demo key printed, and each seeded key it lists answers as it says", async () => {
    const demoKey = /Demo key \(organization org_demo, plan pro\):\n\s+(atl_\w+)\n/.exec(banner)?.[1];
    assert.equal(/^KEY=(atl_\w+)$/m.exec(README)?.[1], demoKey, 'KEY= in the README');
    const table = [...README.matchAll(/^\| `(atl_\w+)` +\| [^|]+\| (\d{3})(?: `(\w+)`)?: /gm)].map(
      ([, key, status, reason]) => ({ key, status: Number(status), reason }),
    );
    assert.deepEqual(
      table.map((row) => row.key).sort(),
      Object.values(LOCAL_KEYS).sort(),
      'every seeded key listed, once',
    );
    for (const row of table) {
      const answer = await fetch(`http://127.0.0.1:${port}/v1/api/keywords?site=acme.com&limit=1`, {
        headers: { authorization: `Bearer ${row.key}` },
      });
      const body = (await answer.json()) as { errors: Array<{ reason?: string }> };
      assert.deepEqual([answer.status, body.errors[0]?.reason], [row.status, row.reason], row.key);
    }
  });

  it('npm run keys manages keys of the running gateway: a created key works, and once revoked is refused', async () => {
    const env = childEnvironment({ LOCAL_DATA_DIR: dir.path });
    const url = `http://127.0.0.1:${port}`;
    const created = await run(
      'npm',
      ['run', 'keys', '--', 'create', '--org', 'org_demo', '--name', 'e2e script', '--json'],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    const { key, plaintext } = jsonAfterNpmBanner<{ key: { id: string }; plaintext: string }>(created.stdout);
    const answer = await callGateway(url, '/v1/api/audit-issues?site=acme.com', plaintext);
    assert.equal(answer.status, 200);

    const revoked = await run('npm', ['run', 'keys', '--', 'revoke', '--org', 'org_demo', key.id], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assertFailure(
      await callGateway(url, '/v1/api/audit-issues?site=acme.com', plaintext),
      401,
      'UNAUTHORIZED',
      'invalid_key',
      'revoked key',
    );
  });

  it('stops on SIGTERM to its process group: exit code 0 within the shutdown delay + 10 s, no process left', async () => {
    const signalled = Date.now();
    gateway.signalGroup('SIGTERM');
    const exit = await gateway.exitWithin(EXIT_WITHIN_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, `npm start did not end cleanly:\n${gateway.stderr()}`);
    assert.ok(Date.now() - signalled < EXIT_WITHIN_MS);
    assert.equal(gateway.groupAlive(), false, 'a process of the group is still running');

    assert.deepEqual(
      logLinesOf(gateway.stdout())
        .filter((line) => line.msg === 'shutdown complete')
        .map((line) => line.code),
      [0],
    );
    // The local key service let go of its data directory.
    for (const file of ['key-service.lock', 'key-service.endpoint.json']) {
      await assert.rejects(
        access(join(dir.path, file)),
        (err: unknown) => (err as NodeJS.ErrnoException).code === 'ENOENT',
        file,
      );
    }
  });
});

/**
 * A supervisor that signals only the process it started (`docker stop` signals PID 1,
 * here npm): npm passes SIGTERM on to its script, and the script's shell must not stand
 * in between, or npm ends at once while the gateway is still draining (and a container
 * runtime then kills it mid-flush).
 */
describe('npm start, stopped by a SIGTERM to npm alone (real processes)', function () {
  this.timeout(60_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let gateway: ProcessGroup | undefined;

  before(async () => {
    dir = await tempDir('e2e-npm-start-');
  });
  after(async () => {
    await gateway?.destroy();
    await dir?.remove();
  });

  it('waits for the gateway to shut down and exits 0 within the shutdown delay + 10 s, leaving no process', async () => {
    const started = await startNpmStart(dir.path);
    gateway = started.gateway;
    const signalled = Date.now();
    process.kill(gateway.pid, 'SIGTERM');
    const exit = await gateway.exitWithin(EXIT_WITHIN_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, `npm start did not end cleanly:\n${gateway.stderr()}`);
    assert.ok(Date.now() - signalled < EXIT_WITHIN_MS);
    assert.equal(gateway.groupAlive(), false, 'the gateway outlived npm');
    assert.deepEqual(
      logLinesOf(gateway.stdout())
        .filter((line) => line.msg === 'shutdown complete')
        .map((line) => line.code),
      [0],
    );
  });
});
