import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { freePort } from '../support/childEnvironment.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { spawnGateway, upstreamEnv } from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import { keywordsData } from '../support/platformAnswers.js';
import type { ProcessGroup } from '../support/processGroup.js';

/**
 * A call is counted at the key service only when its whole answer was written to the client
 * (src/usage/README.md, invariant 5): raw sockets against the gateway as `npm start` runs it, with
 * usage counted where it is billed. A body that cannot be read after valid headers gets the 400
 * envelope; a client that resets, answers queued behind one that closed the connection, and
 * pipelined requests cut by a shutdown count nothing.
 */

interface Platform {
  readonly url: string;
  /** Calls received, and answered. */
  readonly received: () => number;
  readonly answered: () => number;
  /** Each answer waits this long (0: at once). */
  delayMs: number;
  close(): Promise<void>;
}

async function startPlatform(): Promise<Platform> {
  let received = 0;
  let answered = 0;
  const platform = {
    delayMs: 0,
    received: () => received,
    answered: () => answered,
  };
  const server: Server = createServer((req, res) => {
    received += 1;
    req.resume();
    req.on('end', () =>
      setTimeout(() => {
        answered += 1;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: keywordsData() }));
      }, platform.delayMs),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(platform, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}

async function startGateway(
  platform: Platform,
  keyService: FakeKeyService,
): Promise<{ group: ProcessGroup; port: number }> {
  const port = await freePort();
  const group = spawnGateway({
    PORT: String(port),
    HOST: '127.0.0.1',
    ...upstreamEnv(platform.url, keyService),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_REQUESTS: '1000000',
    CACHE_TTL_SECONDS: '0',
    SHUTDOWN_DELAY_SECONDS: '1',
  });
  try {
    await group.waitForOutput(/Gateway listening on/, 30_000, 'stderr');
  } catch (err: unknown) {
    await group.destroy();
    throw new Error(`${String(err)}\n${group.stderr()}`);
  }
  return { group, port };
}

const keywords = (key: string | null) =>
  `GET /v1/api/keywords?site=example.com HTTP/1.1\r\nHost: gateway\r\n${key ? `Authorization: Bearer ${key}\r\n` : ''}\r\n`;

/** Writes `bytes` on a connection of its own and reads until the gateway closes it. */
function exchange(port: number, bytes: string): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.write(bytes);
  });
}

/** The answers in a connection's bytes, in order: status, headers, body (each framed by Content-Length). */
function answersIn(bytes: Buffer): Array<{ status: number; headers: string; body: string }> {
  const answers = [];
  let text = bytes.toString('latin1');
  for (;;) {
    const headEnd = text.indexOf('\r\n\r\n');
    if (headEnd === -1) return answers;
    const head = text.slice(0, headEnd);
    const length = Number(/^content-length:\s*(\d+)/im.exec(head)?.[1] ?? 0);
    if (text.length < headEnd + 4 + length) return answers; // cut short: not an answer received
    answers.push({
      status: Number(head.slice(9, 12)),
      headers: head,
      body: text.slice(headEnd + 4, headEnd + 4 + length),
    });
    text = text.slice(headEnd + 4 + length);
  }
}

describe('usage counts only answers written whole to the client (gateway process)', function () {
  this.timeout(60_000);
  let keyService: FakeKeyService;
  let platform: Platform;
  let gateway: { group: ProcessGroup; port: number };
  let caseNumber = 0;

  /** A key of an organization of its own (no ceiling), so each case's count is its own. */
  const newKey = () => {
    caseNumber += 1;
    const key = testKey(`delivered answers ${caseNumber}`);
    keyService.setAnswer(
      key,
      verifyAnswer(key, { key: { organizationId: `org_delivered_${caseNumber}` }, usage: { ceiling: null } }),
    );
    return { key, organizationId: `org_delivered_${caseNumber}`, closingCalls: 0 };
  };
  type Caller = ReturnType<typeof newKey>;
  const countedFor = (organizationId: string) =>
    keyService.usageEvents.filter((event) => event.organizationId === organizationId).length;
  /**
   * Once every platform call has been answered, one more good call: once it is counted, so is all before it.
   * Resolves with the caller's calls counted, its closing calls left out.
   */
  const settledCount = async (port: number, caller: Caller): Promise<number> => {
    await eventually('every platform call answered', () => platform.answered() === platform.received(), 10_000);
    const before = countedFor(caller.organizationId);
    const [answer] = answersIn(
      await exchange(port, keywords(caller.key).replace('\r\n\r\n', '\r\nConnection: close\r\n\r\n')),
    );
    assert.equal(answer?.status, 200, 'the closing call is served');
    caller.closingCalls += 1;
    await eventually('the closing call counted', () => countedFor(caller.organizationId) > before, 10_000);
    return countedFor(caller.organizationId) - caller.closingCalls;
  };

  before(async () => {
    keyService = await startFakeKeyService();
    platform = await startPlatform();
    gateway = await startGateway(platform, keyService);
  });
  beforeEach(() => {
    platform.delayMs = 0;
  });
  after(async () => {
    await gateway?.group.destroy();
    await platform?.close();
    await keyService?.close();
  });

  for (const [name, body] of [
    ['Transfer-Encoding: gzip', 'gzip\r\n\r\n0\r\n\r\n'],
    ['Transfer-Encoding: identity', 'identity\r\n\r\n0\r\n\r\n'],
    ['Transfer-Encoding: xchunked', 'xchunked\r\n\r\n0\r\n\r\n'],
    ['a chunk size of 19 hex digits', 'chunked\r\n\r\nfffffffffffffffffff\r\n'],
    ['an unterminated quoted chunk extension', 'chunked\r\n\r\n5;a="b\r\nhello\r\n0\r\n\r\n'],
  ] as const) {
    it(`a GET whose body does not parse after its headers (${name}): 400 envelope, not counted`, async () => {
      const caller = newKey();
      const request = keywords(caller.key).replace(/\r\n\r\n$/, `\r\nTransfer-Encoding: ${body}`);
      const answers = answersIn(await exchange(gateway.port, request));
      assert.equal(answers.length, 1, 'one answer, then the connection closes');
      const [answer] = answers;
      assert.equal(answer?.status, 400);
      assert.match(answer?.headers ?? '', /^connection: close$/im);
      const envelope = JSON.parse(answer?.body ?? '') as { data: unknown; errors: Array<{ reason: string }> };
      assert.equal(envelope.data, null);
      assert.equal(envelope.errors[0]?.reason, 'unreadable_request');
      assert.equal(await settledCount(gateway.port, caller), 0);
    });
  }

  it('3 clients that reset right after sending: none counted', async () => {
    const caller = newKey();
    assert.equal(await settledCount(gateway.port, caller), 0, 'the key verified before');
    platform.delayMs = 200;
    const calledBefore = platform.received();
    await Promise.all(
      Array.from(
        { length: 3 },
        () =>
          new Promise<void>((resolve) => {
            const socket = connect(gateway.port, '127.0.0.1');
            socket.on('error', () => {});
            socket.on('close', () => resolve());
            socket.write(keywords(caller.key), () => socket.resetAndDestroy());
          }),
      ),
    );
    await eventually('the 3 platform calls made', () => platform.received() === calledBefore + 3, 10_000);
    platform.delayMs = 0;
    assert.equal(await settledCount(gateway.port, caller), 0);
  });

  it('pipelined [valid, no key, valid, valid]: only the answers written are counted', async () => {
    const caller = newKey();
    assert.equal(await settledCount(gateway.port, caller), 0, 'the key verified before');
    const bytes = await exchange(
      gateway.port,
      keywords(caller.key) + keywords(null) + keywords(caller.key) + keywords(caller.key),
    );
    const statuses = answersIn(bytes).map((answer) => answer.status);
    assert.deepEqual(statuses.slice(0, 2), [200, 401]);
    const written = statuses.filter((status) => status === 200).length;
    assert.ok(written < 3, `answers after the 401 are not written: ${statuses}`);
    assert.equal(await settledCount(gateway.port, caller), written);
  });

  it('SIGTERM while a connection has 8 pipelined requests: only the answers written are counted', async () => {
    const caller = newKey();
    assert.equal(await settledCount(gateway.port, caller), 0, 'the key verified before');
    platform.delayMs = 500;
    const calledBefore = platform.received();
    const received = exchange(gateway.port, keywords(caller.key).repeat(8));
    await eventually('requests in progress at the platform', () => platform.received() > calledBefore, 10_000);
    gateway.group.signalGroup('SIGTERM');
    const answers = answersIn(await received);
    const exit = await gateway.group.exited;
    assert.equal(exit.code, 0, gateway.group.stderr());
    const written = answers.filter((answer) => answer.status === 200).length;
    assert.ok(written >= 1 && written < 8, `some answers were cut by the shutdown: ${written} of 8 written`);
    assert.equal(countedFor(caller.organizationId) - caller.closingCalls, written);
  });
});
