import assert from 'node:assert/strict';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { installShutdown, type ShutdownHandle } from '../../src/lifecycle/shutdown.js';

const DRAIN_LIMIT_LINE =
  'requests still running at the drain limit: answering those that sent nothing, cutting the rest';

interface Harness {
  server: Server;
  url: string;
  exits: number[];
  logs: string[];
  steps: string[];
  /** Requests to /slow wait until this is called. */
  release(): void;
  /** Resolves once a request to /slow reached the server. */
  arrived: Promise<void>;
  /** Resolves once a request to /answering has had its headers and half its body sent (never the rest). */
  answering: Promise<void>;
}

async function serve(): Promise<Harness> {
  let release: () => void = () => undefined;
  let arrive: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  const arrived = new Promise<void>((resolve) => (arrive = resolve));
  let answer: () => void = () => undefined;
  const answering = new Promise<void>((resolve) => (answer = resolve));
  const server = createServer((req, res) => {
    if (req.url === '/slow') {
      arrive();
      void released.then(() => res.end('slow done'));
      return;
    }
    if (req.url === '/answering') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('half of it', () => answer());
      return;
    }
    res.end('ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exits: [],
    logs: [],
    steps: [],
    release,
    arrived,
    answering,
  };
}

function install(
  h: Harness,
  closers: Array<(ms: number) => Promise<void>>,
  drainMs = 5000,
  delay: { delayMs?: number; onDraining?: () => void } = {},
): ShutdownHandle {
  return installShutdown({
    ...delay,
    server: h.server,
    closers,
    logger: pino({ level: 'info' }, { write: (line: string) => h.logs.push(JSON.parse(line).msg as string) }),
    deadlineMs: 8000,
    drainMs,
    signals: [],
    exit: (code) => h.exits.push(code),
  });
}

function get(url: string, agent?: Agent): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('shutdown coordinator', () => {
  let h: Harness;
  let handle: ShutdownHandle | null = null;

  beforeEach(async () => {
    h = await serve();
  });
  afterEach(async () => {
    h.release();
    handle?.uninstall();
    handle = null;
    h.server.closeAllConnections();
    await new Promise<void>((resolve) => h.server.close(() => resolve()));
  });

  it('waits for requests in flight, then runs the closers in order with the time left, then exits 0 once', async () => {
    handle = install(h, [
      async (ms) => {
        assert.ok(ms > 0 && ms <= 8000);
        h.steps.push('flush usage');
      },
      async () => {
        h.steps.push('close limiter');
      },
    ]);
    const slow = get(`${h.url}/slow`);
    await h.arrived;
    const first = handle.shutdown('SIGTERM');
    const second = handle.shutdown('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(h.steps, [], 'nothing is closed while a request runs');
    await assert.rejects(get(`${h.url}/`), (err: unknown) => (err as NodeJS.ErrnoException).code === 'ECONNREFUSED');

    h.release();
    const answer = await slow;
    assert.deepEqual(answer, { status: 200, body: 'slow done', connection: 'close' });
    assert.equal(await first, 0);
    assert.equal(await second, 0);
    assert.deepEqual(h.steps, ['flush usage', 'close limiter']);
    assert.deepEqual(h.exits, [0]);
    assert.equal(h.logs.filter((msg) => msg === 'shutdown already in progress').length, 1);
    assert.equal(h.logs.filter((msg) => msg === 'shutdown complete').length, 1);
  });

  it('after SIGTERM: not ready at once, serves for the delay with Connection: close, then stops listening', async () => {
    let draining = 0;
    handle = install(h, [], 5000, { delayMs: 400, onDraining: () => (draining += 1) });
    const done = handle.shutdown('SIGTERM');
    assert.equal(draining, 1, 'readiness fails at the signal');
    assert.deepEqual(await get(`${h.url}/`), { status: 200, body: 'ok', connection: 'close' });
    assert.deepEqual(h.exits, []);
    assert.equal(await done, 0);
    await assert.rejects(get(`${h.url}/`), (err: unknown) => (err as NodeJS.ErrnoException).code === 'ECONNREFUSED');
  });

  it('after SIGINT (a person at a terminal): no delay', async () => {
    handle = install(h, [], 5000, { delayMs: 60_000 });
    assert.equal(await handle.shutdown('SIGINT'), 0);
    await assert.rejects(get(`${h.url}/`), (err: unknown) => (err as NodeJS.ErrnoException).code === 'ECONNREFUSED');
  });

  it('closes idle keep-alive connections instead of waiting for them', async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      handle = install(h, []);
      assert.equal((await get(`${h.url}/`, agent)).status, 200);
      assert.equal(await handle.shutdown('SIGTERM'), 0);
      assert.ok(!h.logs.includes(DRAIN_LIMIT_LINE));
    } finally {
      agent.destroy();
    }
  });

  it('cuts requests that outlast the drain limit, and still flushes', async () => {
    handle = install(h, [async () => void h.steps.push('flush usage')], 100);
    const slow = get(`${h.url}/slow`).catch((err: unknown) => err);
    await h.arrived;
    assert.equal(await handle.shutdown('SIGTERM'), 0);
    assert.ok((await slow) instanceof Error, 'the unfinished request lost its connection');
    assert.ok(h.logs.includes(DRAIN_LIMIT_LINE));
    assert.deepEqual(h.steps, ['flush usage']);
  });

  it('answers a request still running at the drain limit that sent nothing, and cuts one already answering', async () => {
    handle = installShutdown({
      server: h.server,
      closers: [async () => void h.steps.push('flush usage')],
      logger: pino({ level: 'silent' }),
      deadlineMs: 8000,
      drainMs: 100,
      signals: [],
      exit: (code) => h.exits.push(code),
      answerUnfinished: (res) => {
        res.writeHead(503, { 'retry-after': '1', connection: 'close' });
        res.end('draining');
      },
    });
    const slow = get(`${h.url}/slow`);
    // Its head and half its body arrive; whether the rest ever does is what is asked.
    const cut = new Promise<boolean>((resolve, reject) => {
      request(`${h.url}/answering`, (res) => {
        res.resume();
        res.on('close', () => resolve(res.complete));
      })
        .on('error', reject)
        .end();
    });
    await Promise.all([h.arrived, h.answering]);
    assert.equal(await handle.shutdown('SIGTERM'), 0);
    assert.deepEqual(await slow, { status: 503, body: 'draining', connection: 'close' });
    assert.equal(await cut, false, 'the answer already under way lost its connection');
    assert.deepEqual(h.steps, ['flush usage']);
  });

  it('goes on with the next closer when one fails, and exits 1', async () => {
    handle = install(h, [
      async () => {
        throw new Error('limiter would not close');
      },
      async () => void h.steps.push('close authenticator'),
    ]);
    assert.equal(await handle.shutdown('SIGINT'), 1);
    assert.deepEqual(h.steps, ['close authenticator']);
    assert.deepEqual(h.exits, [1]);
    assert.ok(h.logs.includes('shutdown step failed'));
  });
});
