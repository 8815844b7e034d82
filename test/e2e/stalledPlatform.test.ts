import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { PLATFORM_ANSWER_FIGURES, PLATFORM_ANSWER_MAX_BYTES } from '../../src/upstream/answerSizes.js';
import { trickle } from '../support/countingServer.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import {
  type GatewayProcess,
  spawnCompiledGateway,
  startGatewayProcess,
  upstreamEnv,
} from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import { assertFailure, callGateway, type GatewayAnswer } from './gatewayCalls.js';

/**
 * The gateway as `npm start` runs it, against a platform that is slower than the deadline, that
 * trickles its answers, or that sends far more than any answer the contracts allow. Everything is
 * counted at the platform: the requests open there at once, and the connections open there, whether they
 * carried a request or not.
 */

const TIMEOUT_MS = 2000;
const MB = 1024 * 1024;

type Mode = 'none' | 'largest' | 'huge' | 'trickle' | 'slow';

/** 96 MB of an answer with no stated length, as fast as the client reads it. */
function huge(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' });
  const chunk = Buffer.alloc(MB, 0x20);
  res.write('{"data":{"organization":{"name":"');
  let sent = 0;
  const more = () => {
    while (sent < 96 * MB && !res.destroyed) {
      sent += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', more);
    }
    if (!res.destroyed) res.end('"}}}');
  };
  more();
}

/** Answers after 7 s (the platform's share of a brownout), if the caller still waits. */
function slow(res: ServerResponse): void {
  const timer = setTimeout(() => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ data: { organization: { siteLookup: [] } } }));
  }, 7000);
  res.once('close', () => clearTimeout(timer));
}

/** The Rankings answer the contracts allow at its largest (answerSizes.ts): every field at its longest. */
function largestRankingsAnswer(): string {
  const { trackedKeywords, idBytes, textBytes } = PLATFORM_ANSWER_FIGURES;
  const id = (i: number) => `kw_${i}_`.padEnd(idBytes, 'x');
  // Two bytes a character: the longest keyword is 80 characters outside ASCII.
  const keyword = (i: number) => `${i} `.padEnd(textBytes / 2, 'é');
  const entries = Array.from({ length: trackedKeywords }, (_, i) => i);
  const site = {
    id: 'site_largest',
    latest: {
      date: '2026-11-20',
      entries: entries.map((i) => ({ keywordId: id(i), keyword: keyword(i), position: -2147483648 })),
    },
    start: { date: '2026-11-13', entries: entries.map((i) => ({ keywordId: id(i), position: -2147483648 })) },
  };
  return JSON.stringify({ data: { organization: { siteLookup: [site] } } });
}

const NO_SITE = JSON.stringify({ data: { organization: { siteLookup: [] } } });

async function startTestPlatform() {
  let mode: Mode = 'none';
  const largest = Buffer.from(largestRankingsAnswer());
  const counts = { open: 0, maxOpen: 0, received: 0, connections: 0 };
  // Requests not yet answered, by connection: a connection's end ends them all.
  const unanswered = new Map<Socket, Set<ServerResponse>>();

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    counts.received += 1;
    counts.open += 1;
    counts.maxOpen = Math.max(counts.maxOpen, counts.open);
    unanswered.get(req.socket)?.add(res);
    res.once('finish', () => {
      if (unanswered.get(req.socket)?.delete(res)) counts.open -= 1;
    });
    req.resume();
    if (mode === 'none') res.writeHead(200, { 'content-type': 'application/json' }).end(NO_SITE);
    else if (mode === 'largest') res.writeHead(200, { 'content-type': 'application/json' }).end(largest);
    else if (mode === 'huge') huge(res);
    else if (mode === 'trickle') trickle(res);
    else slow(res);
  });
  server.on('connection', (socket: Socket) => {
    unanswered.set(socket, new Set());
    counts.connections += 1;
    // The first sign of the caller's close: counted before the next request is read.
    const gone = () => {
      if (!unanswered.has(socket)) return;
      counts.open -= unanswered.get(socket)?.size ?? 0;
      unanswered.delete(socket);
      counts.connections -= 1;
    };
    socket.once('end', gone);
    socket.once('error', gone);
    socket.once('close', gone);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    counts,
    largestBytes: largest.length,
    use(next: Mode) {
      mode = next;
      counts.maxOpen = counts.open;
      counts.received = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The gateway's peak resident memory since the last reset (Linux keeps it as VmHWM). */
function peakRssMb(pid: number): number {
  const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) / 1024;
}

const ORGANIZATIONS = 16;

describe('a platform slower than the deadline, trickling, or answering too much (gateway process)', function () {
  this.timeout(90_000);
  let keyService: FakeKeyService;
  let platform: Awaited<ReturnType<typeof startTestPlatform>>;
  let gateway: GatewayProcess;
  const keys = Array.from({ length: ORGANIZATIONS }, (_, i) => testKey(`stalled platform org ${i}`));
  let sequence = 0;
  /** A cold request (a site never asked before) with the key of one of the organizations, in turn. */
  const coldCall = (route = '/v1/api/keywords'): Promise<GatewayAnswer> => {
    sequence += 1;
    return callGateway(gateway.url, `${route}?site=s${sequence}.example`, keys[sequence % ORGANIZATIONS] ?? null);
  };

  before(async () => {
    keyService = await startFakeKeyService();
    keys.forEach((key, i) => {
      keyService.setAnswer(key, verifyAnswer(key, { organization: { id: `org_${i}` }, usage: { ceiling: null } }));
    });
    platform = await startTestPlatform();
    gateway = await startGatewayProcess(
      {
        ...upstreamEnv(platform.origin, keyService),
        UPSTREAM_TIMEOUT_MS: String(TIMEOUT_MS),
        // Two hundred clients, all from this one address.
        MAX_CONNECTIONS_PER_CLIENT: '1000',
      },
      [],
      spawnCompiledGateway,
    );
    // Each key verified once, as a client's first call does (never-seen keys are rationed per address).
    for (const _key of keys) assert.equal((await coldCall()).status, 404);
  });
  after(async () => {
    await gateway?.group.destroy();
    await platform?.close();
    await keyService?.close();
  });

  it('serves the largest answer the contracts allow', async () => {
    platform.use('largest');
    assert.ok(platform.largestBytes <= PLATFORM_ANSWER_MAX_BYTES);
    assert.ok(platform.largestBytes > 0.9 * PLATFORM_ANSWER_MAX_BYTES, `${platform.largestBytes} bytes`);
    const answer = await coldCall('/v1/api/rankings');
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
  });

  it('refuses 64 concurrent answers of 96 MB each with 502 platform_failed, its peak memory under 300 MB', async () => {
    platform.use('huge');
    // Resets the peak (VmHWM) to what is resident now.
    writeFileSync(`/proc/${gateway.group.pid}/clear_refs`, '5');
    const answers = await Promise.all(Array.from({ length: PLATFORM_SHARES.inFlight }, () => coldCall()));
    for (const answer of answers) assertFailure(answer, 502, 'UPSTREAM_ERROR', 'platform_failed', 'a huge answer');
    assert.equal(platform.counts.received, PLATFORM_SHARES.inFlight);
    const peak = peakRssMb(gateway.group.pid);
    assert.ok(peak < 300, `peak RSS ${Math.round(peak)} MB`);
  });

  it('abandons 30 trickling answers at the deadline: 504, and no connection open at the platform 1 s later', async () => {
    platform.use('trickle');
    const answers = await Promise.all(Array.from({ length: 30 }, () => coldCall()));
    for (const answer of answers) assertFailure(answer, 504, 'UPSTREAM_TIMEOUT', 'platform_timeout', 'a trickle');
    await sleep(1000);
    assert.equal(platform.counts.received, 30);
    assert.equal(platform.counts.open, 0, 'requests still open at the platform');
    // Those that carried the answers, and any undici opened in their place (nodejs/undici#5845).
    assert.equal(platform.counts.connections, 0, 'connections still open at the platform');
  });

  it('keeps the platform to 64 open requests under 200 concurrent clients while it answers in 7 s, each answered 504 in time', async () => {
    platform.use('slow');
    const until = performance.now() + 6500;
    const outcomes: Array<{ answer: GatewayAnswer; ms: number }> = [];
    const client = async () => {
      while (performance.now() < until) {
        const started = performance.now();
        const answer = await coldCall();
        outcomes.push({ answer, ms: performance.now() - started });
      }
    };
    await Promise.all(Array.from({ length: 200 }, client));
    for (const { answer, ms } of outcomes) {
      assertFailure(answer, 504, 'UPSTREAM_TIMEOUT', 'platform_timeout', 'a slow platform');
      // The deadline, or soon after (a generous margin for a loaded machine): never the platform's 7 s.
      assert.ok(ms < 3 * TIMEOUT_MS, `answered after ${Math.round(ms)} ms`);
    }
    // Places were freed and taken again several times while the platform still held the first calls.
    assert.ok(platform.counts.received >= 2 * PLATFORM_SHARES.inFlight, `${platform.counts.received} received`);
    assert.ok(platform.counts.maxOpen <= PLATFORM_SHARES.inFlight, `${platform.counts.maxOpen} open at once`);
    await sleep(1000);
    assert.equal(platform.counts.open, 0, 'requests still open at the platform');
    assert.equal(platform.counts.connections, 0, 'connections still open at the platform');
  });
});
