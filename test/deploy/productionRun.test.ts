import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, chown, cp, link, mkdir, readdir, readFile, stat, symlink } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { type LocalUpstreams, startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import { childEnvironment, freePort } from '../support/childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from '../support/processGroup.js';
import { tempDir } from '../support/tempDir.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);
/** The WORKDIR of every stage. */
const WORKDIR = '/app';

/** One stage of the Dockerfile: its name and its instructions, continuation lines joined. */
interface Stage {
  readonly name: string;
  readonly instructions: ReadonlyArray<{ readonly op: string; readonly args: string }>;
}

function dockerfileStages(text: string): Stage[] {
  const stages: Array<{ name: string; instructions: Array<{ op: string; args: string }> }> = [];
  const lines = text.replace(/\\\n/g, ' ').split('\n');
  for (const line of lines.map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))) {
    const [op = '', ...rest] = line.split(/\s+/);
    const args = rest.join(' ');
    if (op.toUpperCase() === 'FROM')
      stages.push({ name: /\bAS\s+(\S+)/i.exec(args)?.[1] ?? 'final', instructions: [] });
    else stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

const argsOf = (stage: Stage, op: string) => stage.instructions.filter((i) => i.op === op).map((i) => i.args);

/**
 * There is no container runtime here, so this reproduces the image: the build stage's
 * `npm run build`, the dependencies stage's install (from npm's cache, no network), then the
 * final stage's files, environment, user and command, made read-only but for its one data
 * folder, and started as an unprivileged user: without upstream settings (a missing ConfigMap) it
 * refuses to start; with them (here the embedded stand-in, run by the test) it serves.
 */
describe('the container image, reproduced (Dockerfile, real process)', function () {
  this.timeout(180_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let app: string;
  let gateway: ProcessGroup | undefined;
  let url: string;
  let final: Stage;
  let upstreams: LocalUpstreams | undefined;
  let upstreamsDir: Awaited<ReturnType<typeof tempDir>> | undefined;
  const unprivileged = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

  before(async () => {
    const stages = dockerfileStages(await readFile(join(REPO, 'Dockerfile'), 'utf8'));
    assert.deepEqual(
      stages.map((s) => s.name),
      ['build', 'dependencies', 'final'],
    );
    const [build, dependencies, last] = stages as [Stage, Stage, Stage];
    final = last;
    dir = await tempDir('image-');
    await chmod(dir.path, 0o755);
    const stageDir = { build: join(dir.path, 'build'), dependencies: join(dir.path, 'dependencies') };
    app = join(dir.path, 'app');

    // The build stage compiles what it copied, with every dependency installed (linked here).
    assert.deepEqual(argsOf(build, 'COPY'), ['package.json package-lock.json ./', 'tsconfig.json ./', 'src/ src/']);
    assert.deepEqual(argsOf(build, 'RUN'), ['npm ci --ignore-scripts', 'npm run build']);
    await mkdir(stageDir.build);
    for (const file of ['package.json', 'package-lock.json', 'tsconfig.json', 'src']) {
      await cp(join(REPO, file), join(stageDir.build, file), { recursive: true });
    }
    await symlink(join(REPO, 'node_modules'), join(stageDir.build, 'node_modules'));
    await run('npm', ['run', 'build'], { cwd: stageDir.build, env: childEnvironment() });

    // The dependencies stage runs its install as written, from npm's cache.
    assert.deepEqual(argsOf(dependencies, 'COPY'), ['package.json package-lock.json ./']);
    await mkdir(stageDir.dependencies);
    for (const file of ['package.json', 'package-lock.json']) {
      await cp(join(REPO, file), join(stageDir.dependencies, file));
    }
    for (const command of argsOf(dependencies, 'RUN')) {
      await run('sh', ['-c', command], {
        cwd: stageDir.dependencies,
        env: childEnvironment({ npm_config_offline: 'true', npm_config_audit: 'false', npm_config_fund: 'false' }),
      });
    }

    // The final stage: its COPY lines, then its one writable folder.
    await mkdir(app);
    for (const args of argsOf(final, 'COPY')) {
      const from = /^--from=(\S+)\s+/.exec(args);
      const [source = '', target = ''] = args.replace(/^--from=\S+\s+/, '').split(/\s+/);
      const root = from === null ? REPO : stageDir[from[1] as keyof typeof stageDir];
      assert.ok(root, `COPY from an unknown stage: ${args}`);
      // A stage's absolute paths are under its WORKDIR, which is that stage's folder here.
      const inStage = from === null ? source : relative(WORKDIR, source);
      await cp(join(root, inStage), join(app, target === './' ? source : target), { recursive: true });
    }
    assert.deepEqual(argsOf(final, 'RUN'), ['mkdir data && chown node:node data']);
    assert.deepEqual(argsOf(final, 'VOLUME'), ['/app/data']);
    await mkdir(join(app, 'data'));
    await run('chmod', ['-R', 'a-w', app]);
    await chmod(join(app, 'data'), 0o755);
    if (unprivileged.uid !== undefined) await chown(join(app, 'data'), unprivileged.uid, unprivileged.gid);
  });

  after(async () => {
    await gateway?.destroy();
    await upstreams?.close();
    await upstreamsDir?.remove();
    if (app !== undefined) await run('chmod', ['-R', 'u+w', app]);
    await dir?.remove();
  });

  it('holds dist/ and the production dependencies only: no TypeScript, no build tool, no test', async () => {
    assert.deepEqual((await readdir(app)).sort(), ['data', 'dist', 'node_modules', 'package.json', 'queries']);
    const modules = await readdir(join(app, 'node_modules'));
    for (const tool of ['esbuild', 'tsx', 'typescript', 'mocha', '@biomejs']) assert.ok(!modules.includes(tool), tool);
    assert.ok((await stat(join(app, 'dist', 'main.js'))).isFile());
  });

  /** The final stage's ENV, and its CMD split into the command and its arguments. */
  async function imageRun() {
    const env = Object.fromEntries(
      argsOf(final, 'ENV')
        .flatMap((args) => args.split(/\s+/))
        .map((pair) => pair.split('=') as [string, string]),
    );
    const [command = '', ...args] = JSON.parse(argsOf(final, 'CMD')[0] ?? '[]') as string[];
    // The image has its own node; this one may sit in a folder the unprivileged user cannot enter.
    const node = join(dir.path, 'node');
    await link(process.execPath, node).catch(() => cp(process.execPath, node).catch(() => {}));
    const base = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent', ...env };
    return { env, command, args, node, base };
  }

  it('without upstream settings (a missing ConfigMap) refuses to start: one line, exit 2, no demo data served', async () => {
    const { env, args, node, base } = await imageRun();
    assert.equal(env.HOST, '0.0.0.0');
    const port = await freePort();
    const refused = startProcessGroup(node, args, {
      cwd: app,
      env: { ...base, PORT: String(port), ADMIN_PORT: String(await freePort()) },
      ...unprivileged,
    });
    try {
      assert.deepEqual(await refused.exitWithin(30_000), { code: 2, signal: null });
      assert.equal(refused.stdout(), '');
      assert.equal(
        refused.stderr(),
        'Invalid configuration:\n  - PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL (with their tokens) are required with HOST=0.0.0.0: the embedded demo upstreams run only on a loopback HOST\n',
      );
    } finally {
      await refused.destroy();
    }
  });

  it('runs as an unprivileged user on a read-only tree and serves the four routes from its upstreams', async () => {
    for (const stage of dockerfileStages(await readFile(join(REPO, 'Dockerfile'), 'utf8'))) {
      assert.deepEqual(argsOf(stage, 'WORKDIR'), [WORKDIR], stage.name);
    }
    assert.deepEqual(argsOf(final, 'USER'), ['node']);
    const { command, args, node, base } = await imageRun();
    const npmStart = (JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8')) as { scripts: { start: string } })
      .scripts.start;
    assert.equal(`exec ${command} ${args.join(' ')}`, npmStart, 'the image runs what `npm start` runs');

    upstreamsDir = await tempDir('image-upstreams-');
    upstreams = await startLocalUpstreams({ dataDir: upstreamsDir.path });
    const port = await freePort();
    const adminPort = await freePort();
    gateway = startProcessGroup(node, args, {
      cwd: app,
      env: {
        ...base,
        PORT: String(port),
        ADMIN_PORT: String(adminPort),
        PLATFORM_GRAPHQL_URL: upstreams.platform.url,
        PLATFORM_TOKEN: upstreams.platform.token,
        KEY_SERVICE_URL: upstreams.keyService.url,
        KEY_SERVICE_TOKEN: upstreams.keyService.token,
      },
      ...unprivileged,
    });
    await gateway.waitForOutput(/"msg":"listening"|Gateway listening on /, 60_000);
    url = `http://127.0.0.1:${port}`;
    const status = await readFile(`/proc/${gateway.pid}/status`, 'utf8');
    if (unprivileged.uid !== undefined) assert.match(status, /^Uid:\s+65534\s/m);

    const routes = [
      '/v1/api/rankings?site=acme.com',
      '/v1/api/ai-visibility/summary?site=acme.com',
      '/v1/api/keywords?site=acme.com',
      '/v1/api/audit-issues?site=acme.com',
    ];
    for (const route of routes) {
      const answer = await fetch(`${url}${route}`, { headers: { authorization: `Bearer ${LOCAL_KEYS.demo}` } });
      assert.equal(answer.status, 200, `${route}: ${await answer.text()}`);
    }
    // The image's ADMIN_PORT: probes and metrics there, not on the public port.
    assert.equal((await fetch(`http://127.0.0.1:${adminPort}/healthz`)).status, 200);
    assert.equal((await fetch(`${url}/healthz`)).status, 404);
  });

  it('stops on SIGTERM with exit code 0, having written only to its data folder', async () => {
    assert.ok(gateway, 'the gateway did not start');
    gateway.signalGroup('SIGTERM');
    assert.deepEqual(await gateway.exitWithin(15_000), { code: 0, signal: null }, gateway.stderr());
    assert.doesNotMatch(gateway.stdout() + gateway.stderr(), /EACCES|EROFS|read-only/i);
    // The image's stdout, for a log collector: JSON lines and nothing else, start to exit.
    const lines = gateway.stdout().split('\n').filter(Boolean);
    assert.ok(lines.length >= 2);
    for (const line of lines) assert.doesNotThrow(() => JSON.parse(line), line);
    for (const entry of await readdir(join(app, 'data'))) assert.ok(['usage-spool'].includes(entry), entry);
  });
});
