import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { lockDataDir } from '../../src/local/dataDirFiles.js';
import { freePort } from '../support/childEnvironment.js';
import { spawnGateway } from '../support/gatewayProcess.js';
import type { ProcessGroup } from '../support/processGroup.js';
import { tempDir } from '../support/tempDir.js';

/**
 * Failures to start that an operator can fix end as configuration errors do: one
 * stderr line naming the address or folder and the cause, no stack, exit code 2.
 */

describe('start-up failures, as the process reports them', () => {
  const started: ProcessGroup[] = [];
  afterEach(async () => {
    for (const child of started.splice(0)) await child.destroy();
  });

  async function startWith(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    const child = spawnGateway({ LOG_LEVEL: 'silent', ...env });
    started.push(child);
    const exit = await child.exited;
    return { code: exit.code, stderr: child.stderr() };
  }

  function assertOneLine(stderr: string, pattern: RegExp): void {
    const lines = stderr.split('\n').filter((line) => line !== '');
    assert.equal(lines.length, 1, `one line: ${stderr}`);
    assert.match(lines[0] ?? '', pattern);
    assert.doesNotMatch(stderr, /\bat .+:\d+:\d+/, 'no stack');
  }

  it('a port already in use', async () => {
    const dir = await tempDir();
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const address = holder.address();
    assert.ok(address !== null && typeof address === 'object');
    try {
      const { code, stderr } = await startWith({
        PORT: String(address.port),
        HOST: '127.0.0.1',
        LOCAL_DATA_DIR: dir.path,
      });
      assert.equal(code, 2);
      assertOneLine(
        stderr,
        new RegExp(`^cannot listen on 127\\.0\\.0\\.1:${address.port}: the port is already in use .*\\(EADDRINUSE\\)$`),
      );
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
      await dir.remove();
    }
  });

  it('a port an old instance still holds, with Redis and real upstreams: one stderr line, nothing on stdout', async () => {
    // What a replacement started too early on a fixed port meets: the Redis connection it would
    // open is still connecting (nothing listens at the Redis port here) when the listener fails.
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const address = holder.address();
    assert.ok(address !== null && typeof address === 'object');
    const nowhere = `http://127.0.0.1:${await freePort()}`;
    try {
      for (const busy of ['PORT', 'ADMIN_PORT'] as const) {
        const child = spawnGateway({
          LOG_LEVEL: 'info',
          HOST: '127.0.0.1',
          PORT: '0',
          ADMIN_PORT: '0',
          [busy]: String(address.port),
          REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
          PLATFORM_GRAPHQL_URL: `${nowhere}/graphql`,
          PLATFORM_TOKEN: 'platform-token',
          KEY_SERVICE_URL: nowhere,
          KEY_SERVICE_TOKEN: 'key-service-token',
        });
        started.push(child);
        const exit = await child.exited;
        assert.equal(exit.code, 2, busy);
        assert.equal(child.stdout(), '', `${busy}: nothing on stdout`);
        assertOneLine(
          child.stderr(),
          new RegExp(
            `^cannot listen on 127\\.0\\.0\\.1:${address.port}: the port is already in use .*\\(EADDRINUSE\\)$`,
          ),
        );
      }
    } finally {
      await new Promise<void>((resolve) => holder.close(() => resolve()));
    }
  });

  it('an address that is not on this machine', async () => {
    const dir = await tempDir();
    try {
      // 192.0.2.0/24 is reserved for documentation: never a local address.
      // Off loopback the embedded upstreams never start: real ones are named (nothing is called before listening).
      const nowhere = `http://127.0.0.1:${await freePort()}`;
      const { code, stderr } = await startWith({
        PORT: '0',
        HOST: '192.0.2.1',
        LOCAL_DATA_DIR: dir.path,
        PLATFORM_GRAPHQL_URL: `${nowhere}/graphql`,
        PLATFORM_TOKEN: 'platform-token',
        KEY_SERVICE_URL: nowhere,
        KEY_SERVICE_TOKEN: 'key-service-token',
      });
      assert.equal(code, 2);
      assertOneLine(
        stderr,
        /^cannot listen on 192\.0\.2\.1:0: the address is not one of this machine.s \(check HOST\) \(EADDRNOTAVAIL\)$/,
      );
    } finally {
      await dir.remove();
    }
  });

  it('a data directory another process holds', async () => {
    const dir = await tempDir();
    const lock = await lockDataDir(dir.path);
    try {
      const { code, stderr } = await startWith({ PORT: '0', HOST: '127.0.0.1', LOCAL_DATA_DIR: dir.path });
      assert.equal(code, 2);
      const line = `cannot start: the data directory is locked: another local key service (pid ${process.pid}) already uses ${dir.path}`;
      assertOneLine(stderr, new RegExp(`^${line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    } finally {
      await lock.release();
      await dir.remove();
    }
  });

  it('a configuration error, for comparison', async () => {
    const { code, stderr } = await startWith({ CACHE_TTL_SECONDS: '-1' });
    assert.equal(code, 2);
    assert.match(stderr, /CACHE_TTL_SECONDS must be between 0 and 3600 \(got -1\)/);
  });
});
