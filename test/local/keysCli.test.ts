import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyHashOf, toWellFormedKey } from '../../src/auth/keyFormat.js';
import type { Key } from '../../src/local/keyStore.js';
import { runKeysCli } from '../../src/local/keysCli.js';
import { type LocalKeyService, startLocalKeyService } from '../../src/local/localKeyService.js';
import { tempDir } from '../support/tempDir.js';
import { createKeyCall, verifyCall } from './keyServiceHttp.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/local/keysCli.ts', import.meta.url));
const DAY = 86_400_000;

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `npm run keys -- ...` as its own process, with exactly the environment given. */
function runCli(args: readonly string[], env: Record<string, string>): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function closedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('npm run keys (src/local/keysCli.ts)', function () {
  // Some tests start the CLI several times, each a Node process compiling TypeScript: slow on a busy machine.
  this.timeout(60_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let service: LocalKeyService;
  let local: Record<string, string>;

  before(async () => {
    dir = await tempDir('local-cli-');
    // A running local key service announces itself in the data directory, as `npm start` does.
    service = await startLocalKeyService({ dataDir: dir.path });
    local = { LOCAL_DATA_DIR: dir.path };
  });
  after(async () => {
    await service.close();
    await dir.remove();
  });

  it('creates, lists and revokes through the running local key service', async () => {
    const created = await runCli(
      [
        'create',
        '--org',
        'org_demo',
        '--name',
        'ci export',
        '--permissions',
        'read, audit',
        '--expires-in-days',
        '30',
        '--json',
      ],
      local,
    );
    assert.equal(created.code, 0, created.stderr);
    const { key, plaintext } = JSON.parse(created.stdout) as { key: Key; plaintext: string };
    assert.ok(toWellFormedKey(plaintext));
    assert.deepEqual(
      [key.organizationId, key.name, key.permissions, key.createdBy],
      ['org_demo', 'ci export', ['read', 'audit'], 'usr_local_owner'],
    );
    const lifetime = Date.parse(key.expiresAt) - Date.parse(key.createdAt);
    assert.ok(Math.abs(lifetime - 30 * DAY) < 60_000, `about 30 days, got ${lifetime} ms`);
    assert.equal((await verifyCall(service, keyHashOf(plaintext))).body.key.id, key.id);
    assert.ok(!(await readFile(service.dataFile, 'utf8')).includes(plaintext.slice(4)));

    const listed = await runCli(['list', '--org', 'org_demo'], local);
    assert.equal(listed.code, 0, listed.stderr);
    const line = listed.stdout.split('\n').find((l) => l.startsWith(key.id));
    assert.ok(line, listed.stdout);
    assert.match(line, /active\s+read,audit/);
    assert.ok(!listed.stdout.includes(plaintext.slice(4)));
    assert.match(listed.stdout, /key_LOCALDEMO00000000000000004 .* revoked /);

    const [revoked, again] = [
      await runCli(['revoke', '--org', 'org_demo', key.id], local),
      await runCli(['revoke', '--org', 'org_demo', key.id], local),
    ];
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`Key ${key.id} .*revoked`));
    assert.equal(again.code, 0, again.stderr);
    const after = (await verifyCall(service, keyHashOf(plaintext))).body.key;
    assert.equal(after.revokedBy, 'usr_local_owner');
    assert.ok(again.stdout.includes(after.revokedAt ?? 'missing'), 'revoking again keeps the first revocation');
  });

  it('says each refusal in one line and exits 1 (or 2 for configuration)', async function () {
    this.timeout(60_000); // a dozen CLI processes, each a few seconds on a busy machine
    // Fill org_other up to 50 active keys so the next one is refused.
    for (let i = 2; i <= 50; i++) await createKeyCall(service, 'org_other', { name: `k${i}`, permissions: ['read'] });
    const unreachable = await closedPortUrl();
    const remote = (url: string) => ({
      KEY_SERVICE_URL: url,
      KEY_SERVICE_TOKEN: service.token,
    });
    const cases: Array<{ args: string[]; env: Record<string, string>; code: number; line: RegExp }> = [
      {
        args: ['list', '--org', 'org_demo', '--actor-permissions', 'billing'],
        env: local,
        code: 1,
        line: /^keys: forbidden: usr_local_owner does not hold the manage_api_keys permission$/,
      },
      {
        args: ['create', '--org', 'org_nope', '--name', 'x'],
        env: local,
        code: 1,
        line: /^keys: not found: the key service knows no organization org_nope$/,
      },
      {
        args: ['revoke', '--org', 'org_demo', 'key_nope'],
        env: local,
        code: 1,
        line: /^keys: not found: organization org_demo has no key key_nope$/,
      },
      {
        args: ['create', '--org', 'org_demo', '--name', 'x', '--expires-in-days', '731'],
        env: local,
        code: 1,
        line: /^keys: invalid expiry: .*730 days/,
      },
      {
        args: ['create', '--org', 'org_demo', '--name', 'x'.repeat(101)],
        env: local,
        code: 1,
        line: /^keys: invalid request: the name must be 1 to 100 characters/,
      },
      {
        args: ['create', '--org', 'org_other', '--name', 'one too many'],
        env: local,
        code: 1,
        line: /^keys: active key limit: org_other already has 50 active keys/,
      },
      {
        args: ['list', '--org', 'org_demo'],
        env: remote(unreachable),
        code: 1,
        line: /^keys: the key service at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED\)$/,
      },
      {
        args: ['list', '--org', 'org_demo'],
        env: { ...remote(service.url), KEY_SERVICE_TOKEN: 'wrong' },
        code: 1,
        line: /^keys: the key service refused the service token \(401\)/,
      },
      {
        args: ['list', '--org', 'org_demo'],
        env: { KEY_SERVICE_URL: service.url },
        code: 2,
        line: /^keys: KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL$/,
      },
    ];
    const runs = await Promise.all(cases.map((c) => runCli(c.args, c.env)));
    runs.forEach((run, i) => {
      const c = cases[i];
      assert.ok(c);
      assert.equal(run.code, c.code, `${c.args.join(' ')}: ${run.stderr}`);
      assert.equal(run.stdout, '');
      const lines = run.stderr.trim().split('\n');
      assert.equal(lines.length, 1, run.stderr);
      assert.match(lines[0] ?? '', c.line);
    });
  });

  it('talks to KEY_SERVICE_URL when it is set, with no platform configured', async () => {
    const otherDir = await tempDir('local-cli-remote-');
    const remote = await startLocalKeyService({ dataDir: otherDir.path, announce: false });
    try {
      const run = await runCli(['list', '--org', 'org_starter', '--json'], {
        KEY_SERVICE_URL: `${remote.url}/`,
        KEY_SERVICE_TOKEN: remote.token,
        LOCAL_DATA_DIR: dir.path,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(
        (JSON.parse(run.stdout) as { keys: Key[] }).keys.map((k) => k.name),
        ['local starter'],
      );
    } finally {
      await remote.close();
      await otherDir.remove();
    }
  });

  it('works on the data file itself when no local key service runs (and past a stale endpoint)', async () => {
    const idle = await tempDir('local-cli-idle-');
    try {
      // The endpoint of a service that is gone: the CLI must not give up on it.
      await writeFile(
        join(idle.path, 'key-service.endpoint.json'),
        JSON.stringify({ url: await closedPortUrl(), token: 't', pid: process.pid }),
      );
      const created = await runCli(['create', '--org', 'org_starter', '--name', 'offline', '--json'], {
        LOCAL_DATA_DIR: idle.path,
      });
      assert.equal(created.code, 0, created.stderr);
      const { plaintext } = JSON.parse(created.stdout) as { plaintext: string };
      const started = await startLocalKeyService({ dataDir: idle.path, announce: false });
      try {
        const verified = await verifyCall(started, keyHashOf(plaintext));
        assert.deepEqual([verified.status, verified.body.key.name], [200, 'offline']);
      } finally {
        await started.close();
      }
    } finally {
      await idle.remove();
    }
  });

  it('explains its usage and exits 2 on a wrong command line (in process)', async () => {
    const cases = [
      [],
      ['list'],
      ['create', '--org', 'org_demo'],
      ['revoke', '--org', 'org_demo'],
      ['rotate', '--org', 'x'],
      ['create', '--org', 'o', '--name', 'n', '--expires-in-days', 'soon'],
      ['list', '--org', 'o', '--bogus'],
    ];
    for (const argv of cases) {
      const lines: string[] = [];
      const code = await runKeysCli(argv, { out: (l) => lines.push(l), err: (l) => lines.push(l) });
      assert.equal(code, 2, argv.join(' '));
      assert.match(lines.join('\n'), /Usage:\n {2}npm run keys -- create --org <id> --name <name>/);
    }
  });

  it('refuses permission names that grant nothing, saying what each one grants, unless told to allow them', async () => {
    for (const permissions of ['admin', 'raed', 'read,Write', ' , ']) {
      const errors: string[] = [];
      const code = await runKeysCli(['create', '--org', 'org_demo', '--name', 'n', '--permissions', permissions], {
        out: () => {},
        err: (l) => errors.push(l),
      });
      assert.equal(code, 2, permissions);
      const text = errors.join('\n');
      assert.match(errors[0] ?? '', /^keys: (unknown permission|--permissions names no permission)/, permissions);
      assert.match(text, /read +GET on the public \/v1\/api\/\* routes/);
      for (const name of ['write', 'audit', 'content']) assert.match(text, new RegExp(`\\n {2}${name} +\\S`), name);
    }
    const created = await runCli(
      [
        'create',
        '--org',
        'org_demo',
        '--name',
        'insisted',
        '--permissions',
        'read,admin',
        '--allow-unknown-permissions',
        '--json',
      ],
      local,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.deepEqual((JSON.parse(created.stdout) as { key: { permissions: string[] } }).key.permissions, [
      'read',
      'admin',
    ]);
  });
});

describe('npm run keys against a key service answering hostile names', () => {
  const hostile: Key = {
    id: 'key_evil\u001b[2J',
    organizationId: 'org_x',
    name: 'harmless\nkey_forged  atl_forged  active  read  2099-01-01  ceo key\u009b31m\u202e',
    prefix: 'atl_evil0000',
    permissions: ['read\u0007'],
    createdAt: '2026-01-10T09:00:00.000Z',
    createdBy: 'usr_1',
    expiresAt: '2099-01-01T00:00:00.000Z',
    lastUsedAt: null,
    revokedAt: null,
    revokedBy: null,
  } as unknown as Key;
  let server: ReturnType<typeof createServer>;
  let url: string;

  before(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [hostile] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const unprintable = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;

  it('prints what the key service answers escaped, one line per key, in the table and in JSON', async () => {
    const env = { KEY_SERVICE_URL: url, KEY_SERVICE_TOKEN: 't' };
    const listed = await runCli(['list', '--org', 'org_x'], env);
    assert.equal(listed.code, 0, listed.stderr);
    const lines = listed.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 2, 'a header and one key: no forged line');
    for (const line of lines) assert.doesNotMatch(line, unprintable);
    assert.match(lines[1] ?? '', /key_evil\\u001b\[2J .*harmless\\u000akey_forged.*\\u009b31m\\u202e$/);

    const json = await runCli(['list', '--org', 'org_x', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    for (const line of json.stdout.split('\n')) assert.doesNotMatch(line, unprintable);
    assert.deepEqual(
      (JSON.parse(json.stdout) as { keys: Key[] }).keys[0],
      hostile,
      'the JSON still says exactly what was answered',
    );
  });

  it('refuses a name holding control characters before calling the key service', async () => {
    for (const name of ['two\nlines', 'bell\u0007', 'csi\u001b[31m', 'c1\u009b', 'tab\there', 'rtl\u202e']) {
      const errors: string[] = [];
      const code = await runKeysCli(['create', '--org', 'org_x', '--name', name], {
        out: () => {},
        err: (l) => errors.push(l),
      });
      assert.equal(code, 2, JSON.stringify(name));
      assert.match(errors[0] ?? '', /^keys: --name must not hold control characters/);
    }
  });
});

describe('npm run keys shows names and echoed values as they will look', () => {
  const ESC = '\u001b';
  const hostileOrg = `org_${ESC}[2J${ESC}[31mPWNED`;
  const invisibles: Array<[string, string]> = [
    ['left-to-right mark', '\u200e'],
    ['right-to-left mark', '\u200f'],
    ['Arabic letter mark', '\u061c'],
    ...['\u202a', '\u202b', '\u202c', '\u202d', '\u202e'].map((char): [string, string] => ['bidi embedding', char]),
    ...['\u2066', '\u2067', '\u2068', '\u2069'].map((char): [string, string] => ['bidi isolate', char]),
    ['zero-width space', '\u200b'],
    ['zero-width non-joiner', '\u200c'],
    ['zero-width joiner', '\u200d'],
    ['word joiner', '\u2060'],
    ['line separator', '\u2028'],
    ['paragraph separator', '\u2029'],
    ['byte order mark', '\ufeff'],
    ['tag letter A', '\u{e0041}'],
    ['cancel tag', '\u{e007f}'],
    ['Hangul filler', '\u3164'],
    ['Hangul choseong filler', '\u115f'],
    ['Hangul jungseong filler', '\u1160'],
    ['halfwidth Hangul filler', '\uffa0'],
    ['no-break space', '\u00a0'],
  ];
  /** What a terminal would act on or show as nothing, in any line printed. */
  const unshown = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\u3164\u115f\u1160\uffa0\u00a0]/u;
  const invisibleName = `ops${invisibles.map(([, char]) => char).join('')}key`;
  let server: ReturnType<typeof createServer>;
  let env: Record<string, string>;
  const requests: string[] = [];

  before(async () => {
    const key = {
      id: `key_${ESC}[2J`,
      organizationId: hostileOrg,
      name: invisibleName,
      prefix: 'atl_abcd0000',
      permissions: ['read'],
      createdAt: '2026-01-10T09:00:00.000Z',
      createdBy: 'usr_1',
      expiresAt: '2099-01-01T00:00:00.000Z',
      lastUsedAt: null,
      revokedAt: null,
      revokedBy: null,
    };
    server = createServer((req, res) => {
      req.resume();
      requests.push(`${req.method} ${req.url}`);
      const answer = (status: number, body: unknown) =>
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      if (req.url === '/v1/organizations/org_listed/keys') return answer(200, { keys: [key] });
      if (req.method === 'POST' && req.url?.endsWith('/keys')) return answer(201, { key, plaintext: 'atl_plain' });
      return answer(404, { error: 'not_found' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    env = { KEY_SERVICE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, KEY_SERVICE_TOKEN: 't' };
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('refuses a name holding a character that shows as nothing or as a space, before calling the key service', async () => {
    for (const [what, char] of invisibles) {
      const errors: string[] = [];
      const code = await runKeysCli(['create', '--org', 'org_x', '--name', `billing${char}key`], {
        out: () => {},
        err: (l) => errors.push(l),
      });
      assert.equal(code, 2, what);
      assert.match(
        errors[0] ?? '',
        /^keys: --name must not hold control characters .*nor ones that show as nothing/,
        what,
      );
    }
    assert.deepEqual(requests, []);
  });

  it('escapes what it echoes of a wrong command line', async () => {
    for (const argv of [
      [`rotate${ESC}[2J`, '--org', 'x'],
      ['list', '--org', 'o', `--bo${ESC}[2Jgus`],
      ['revoke', '--org', 'o', 'key_1', `extra${ESC}[31m\u202e`],
      ['create', '--org', 'o', '--name', 'n', '--permissions', `admin${ESC}[2J`],
    ]) {
      const errors: string[] = [];
      assert.equal(await runKeysCli(argv, { out: () => {}, err: (l) => errors.push(l) }), 2, argv.join(' '));
      // The usage text follows on lines of its own.
      for (const line of errors.join('\n').split('\n')) assert.doesNotMatch(line, unshown, JSON.stringify(line));
      assert.match(errors[0] ?? '', /\\u001b\[/, 'the escape is shown, not acted on');
    }
  });

  it('escapes an organization and a key id in answers and refusals, and a name the key service holds', async () => {
    const runs = await Promise.all([
      runCli(['list', '--org', hostileOrg], env),
      runCli(['create', '--org', hostileOrg, '--name', 'fine name'], env),
      runCli(['revoke', '--org', hostileOrg, `key_${ESC}[2J`], env),
      runCli(['list', '--org', 'org_listed'], env),
      runCli(['list', '--org', 'org_listed', '--json'], env),
    ]);
    assert.deepEqual(
      runs.map(({ code }) => code),
      [1, 0, 1, 0, 0],
      runs.map(({ stderr }) => stderr).join(''),
    );
    for (const { stdout, stderr } of runs) {
      for (const line of `${stdout}${stderr}`.split('\n')) assert.doesNotMatch(line, unshown, JSON.stringify(line));
    }
    const [listed, created, revoked, table, json] = runs;
    assert.match(listed?.stderr ?? '', /organization org_\\u001b\[2J\\u001b\[31mPWNED$/m);
    assert.match(created?.stdout ?? '', /^Created key key_\\u001b\[2J for org_\\u001b\[2J\\u001b\[31mPWNED$/m);
    assert.match(revoked?.stderr ?? '', /has no key key_\\u001b\[2J$/m);
    assert.match(
      table?.stdout ?? '',
      /ops\\u200e\\u200f\\u061c.*\\udb40\\udc41\\udb40\\udc7f\\u3164\\u115f\\u1160\\uffa0\\u00a0key$/m,
    );
    assert.equal((JSON.parse(json?.stdout ?? '{}') as { keys: Key[] }).keys[0]?.name, invisibleName);
  });
});
