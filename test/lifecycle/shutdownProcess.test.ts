import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/tempDir.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/gatewayProcess.ts', import.meta.url));

interface LogLine {
  msg: string;
  port?: number;
  code?: number;
  spooled?: number;
}

/** The key service's usage endpoint: refuses the first call (503), then counts events by id. */
class FakeKeyService {
  readonly counted = new Map<string, { organizationId: string; route: string }>();
  calls = 0;
  /** Events received again after they were counted. */
  duplicates = 0;
  /** While true, every usage call fails (503). */
  down = false;
  private server: Server | null = null;
  url = '';

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (
          req.method !== 'POST' ||
          req.url !== '/v1/usage' ||
          req.headers.authorization !== 'Bearer key-service-token'
        ) {
          res.writeHead(404).end();
          return;
        }
        this.calls += 1;
        if (this.calls === 1 || this.down) {
          res.writeHead(503).end();
          return;
        }
        const { events } = JSON.parse(body) as { events: Array<{ id: string; organizationId: string; route: string }> };
        let accepted = 0;
        for (const event of events) {
          if (!this.counted.has(event.id)) accepted += 1;
          else this.duplicates += 1;
          this.counted.set(event.id, { organizationId: event.organizationId, route: event.route });
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ accepted, duplicates: events.length - accepted }));
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** The fixture gateway as a real child process, with its log lines as they come. */
class GatewayProcess {
  readonly lines: LogLine[] = [];
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<() => void> = [];

  constructor(keyServiceUrl: string, platformDelayMs: number, spoolDir?: string) {
    const args = [FIXTURE, keyServiceUrl, String(platformDelayMs), ...(spoolDir ? [spoolDir] : [])];
    // detached: its own process group, so a test can signal the group as operators do.
    this.child = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    let buffered = '';
    this.child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          // not a log line
        }
        for (const wake of this.waiters.splice(0)) wake();
      }
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  count(msg: string): number {
    return this.lines.filter((line) => line.msg === msg).length;
  }

  async waitFor(msg: string, times = 1, withinMs = 10_000): Promise<LogLine> {
    const deadline = Date.now() + withinMs;
    while (this.count(msg) < times) {
      if (Date.now() > deadline) throw new Error(`no '${msg}' (x${times}) from the gateway`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.lines.filter((line) => line.msg === msg)[times - 1] as LogLine;
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
  }
}

describe('graceful shutdown of a real gateway process', function () {
  this.timeout(30_000);
  let keyService: FakeKeyService;
  let gateway: GatewayProcess | null = null;

  beforeEach(() => {
    keyService = new FakeKeyService();
  });
  afterEach(async () => {
    gateway?.kill();
    await gateway?.exited;
    gateway = null;
    await keyService.stop();
  });

  const startGateway = async (platformDelayMs: number, spoolDir?: string, keyServiceUrl?: string) => {
    gateway = new GatewayProcess(keyServiceUrl ?? (await keyService.start()), platformDelayMs, spoolDir);
    const { port } = await gateway.waitFor('listening', 1, 20_000);
    return { gateway, url: `http://127.0.0.1:${port}` };
  };
  const get = (url: string) =>
    fetch(`${url}/v1/api/keywords?site=example.com`, { headers: { authorization: 'Bearer key-org-a' } });

  it('on SIGTERM mid-traffic: finishes requests in flight, refuses new ones, flushes every event, exits 0 within 10 s', async () => {
    const { gateway, url } = await startGateway(600);
    const early = await get(url);
    assert.equal(early.status, 200);
    await early.arrayBuffer();

    const inFlight = Array.from({ length: 4 }, () => get(url));
    await gateway.waitFor('platform call', 5);
    const signalled = Date.now();
    gateway.child.kill('SIGTERM');
    await gateway.waitFor('shutting down: taking no new connections, finishing requests in flight');
    // No new connection is accepted.
    await assert.rejects(fetch(`${url}/healthz`), (err: unknown) => err instanceof TypeError);

    const responses = await Promise.all(inFlight);
    assert.deepEqual(
      responses.map((res) => res.status),
      [200, 200, 200, 200],
    );
    await Promise.all(responses.map((res) => res.arrayBuffer()));
    const { code, signal } = await gateway.exited;
    assert.equal(signal, null);
    assert.equal(code, 0);
    assert.ok(Date.now() - signalled < 10_000, 'exited within 10 s of the signal');

    assert.equal(keyService.counted.size, 5, 'every successful call reached the key service');
    assert.ok(keyService.calls >= 2, 'the refused first flush was retried');
    for (const event of keyService.counted.values()) {
      assert.deepEqual(event, { organizationId: 'org_a', route: '/v1/api/keywords' });
    }
    assert.equal(gateway.count('shutdown complete'), 1);
  });

  it('SIGTERM to the process group and to the process itself, then again: one clean shutdown', async () => {
    const { gateway, url } = await startGateway(500);
    const inFlight = Array.from({ length: 3 }, () => get(url));
    await gateway.waitFor('platform call', 3);
    const pid = gateway.child.pid;
    assert.ok(pid !== undefined);
    // Sent together, the two may merge into one delivery (signals do not queue)...
    process.kill(-pid, 'SIGTERM');
    gateway.child.kill('SIGTERM');
    await gateway.waitFor('shutting down: taking no new connections, finishing requests in flight');
    // ...so one more arrives while the shutdown is surely under way.
    gateway.child.kill('SIGTERM');
    await gateway.waitFor('shutdown already in progress');

    const responses = await Promise.all(inFlight);
    assert.deepEqual(
      responses.map((res) => res.status),
      [200, 200, 200],
    );
    await Promise.all(responses.map((res) => res.arrayBuffer()));
    const { code } = await gateway.exited;
    assert.equal(code, 0);
    assert.equal(gateway.count('shutting down: taking no new connections, finishing requests in flight'), 1);
    assert.equal(gateway.count('shutdown complete'), 1);
    assert.equal(keyService.counted.size, 3);
  });

  it('SIGTERM while the key service takes no usage: spooled, exit 0 within 10 s; the next instance delivers each event once', async () => {
    const spool = await tempDir('usage-spool-');
    try {
      keyService.down = true;
      const first = await startGateway(5, spool.path);
      const served = [];
      for (let i = 0; i < 20; i++) {
        const res = await get(first.url);
        await res.arrayBuffer();
        served.push(res.status);
      }
      assert.deepEqual(
        served,
        Array.from({ length: 20 }, () => 200),
      );
      const signalled = Date.now();
      first.gateway.child.kill('SIGTERM');
      const exit = await first.gateway.exited;
      assert.equal(exit.code, 0);
      assert.ok(Date.now() - signalled < 10_000, 'exited within 10 s of the signal');
      assert.equal(keyService.counted.size, 0);
      assert.equal(first.gateway.lines.find((line) => line.msg.includes('spooled'))?.spooled, 20);

      keyService.down = false;
      const second = await startGateway(5, spool.path, keyService.url);
      const deadline = Date.now() + 15_000;
      while (keyService.counted.size < 20 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(keyService.counted.size, 20, 'every spooled event delivered within 15 s of the start');
      assert.equal(keyService.duplicates, 0);
      second.gateway.child.kill('SIGTERM');
      assert.equal((await second.gateway.exited).code, 0);
      assert.deepEqual(await readdir(spool.path), [], 'nothing left to deliver twice');
    } finally {
      await spool.remove();
    }
  });
});
