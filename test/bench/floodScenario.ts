import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, type IncomingMessage, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKey } from '../../src/local/keysCli.js';
import { LOCAL_KEYS, LOCAL_OWNER_ID } from '../../src/local/seedAccounts.js';
import { startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import { percentile } from './stats.js';

/**
 * `npm run bench -- --only flood` (issue 12): paying callers while anonymous clients
 * flood the gateway with made-up keys. One gateway as `npm start` runs it (built, one
 * process), its key service answering verify in 20 ms; 200 connections of made-up keys
 * for 15 s, first from one address, then each request from its own address through one
 * trusted proxy hop. Meanwhile a cached key of an organization with a ceiling and one
 * without are asked every 250 ms, and a key never used before is asked once per phase.
 * Prints answers, p99, the key service's verify rate, the log's growth and the RSS.
 */

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const KEY_SERVICE_DELAY_MS = 20;
const FLOOD_CONNECTIONS = 200;
const FLOOD_SECONDS = 15;
const POLL_MS = 250;
const PATH = '/v1/api/keywords?site=acme.com&limit=5';

interface Answer {
  status: number;
  retryAfter: string | undefined;
  ms: number;
}

export async function runFloodScenario(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-flood-'));
  const upstreams = await startLocalUpstreams({ dataDir });
  const slowKeys = await delayingProxy(upstreams.keyService.url, KEY_SERVICE_DELAY_MS);
  const gateway = await startBuiltGateway({
    PLATFORM_GRAPHQL_URL: upstreams.platform.url,
    PLATFORM_TOKEN: upstreams.platform.token,
    KEY_SERVICE_URL: slowKeys.url,
    KEY_SERVICE_TOKEN: upstreams.keyService.token,
    TRUSTED_PROXY_HOPS: '1',
    RATE_LIMIT_REQUESTS: '1000000',
  });
  const agent = new Agent({ keepAlive: true, maxSockets: FLOOD_CONNECTIONS + 10 });
  try {
    const legit = { ceiling: LOCAL_KEYS.demo, noCeiling: LOCAL_KEYS.other };
    for (const key of Object.values(legit)) await ask(agent, gateway.url, key, '10.0.0.1'); // cached before the flood
    for (const phase of ['one address', 'many addresses'] as const) {
      const fresh = await createKey(
        upstreams.keyService,
        { id: LOCAL_OWNER_ID, permissions: ['manage_api_keys'] },
        'org_other',
        {
          name: `flood bench ${phase}`,
          permissions: ['read'],
        },
      );
      await runPhase(phase, { agent, gatewayUrl: gateway.url, legit, freshKey: fresh.plaintext, gateway, slowKeys });
    }
  } finally {
    agent.destroy();
    await gateway.stop();
    await new Promise<void>((resolve) => slowKeys.server.close(() => resolve()));
    await upstreams.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function runPhase(
  phase: 'one address' | 'many addresses',
  run: {
    agent: Agent;
    gatewayUrl: string;
    legit: Record<'ceiling' | 'noCeiling', string>;
    freshKey: string;
    gateway: BuiltGateway;
    slowKeys: DelayingProxy;
  },
): Promise<void> {
  const verifiesBefore = run.slowKeys.verifyCalls();
  const logBefore = run.gateway.logBytes();
  let rssMaxKb = 0;
  const rssTimer = setInterval(() => (rssMaxKb = Math.max(rssMaxKb, run.gateway.rssKb())), 200);
  const started = performance.now();
  const endsAt = started + FLOOD_SECONDS * 1000;
  const flood = runFloodClients(run.gatewayUrl, phase === 'one address' ? 'one' : 'many');
  const legitAnswers: Record<string, Answer[]> = { ceiling: [], noCeiling: [] };
  const poll = async () => {
    while (performance.now() < endsAt) {
      const tick = performance.now();
      await Promise.all(
        (['ceiling', 'noCeiling'] as const).map(async (name) =>
          legitAnswers[name]?.push(await ask(run.agent, run.gatewayUrl, run.legit[name], '203.0.113.10')),
        ),
      );
      await sleep(Math.max(0, POLL_MS - (performance.now() - tick)));
    }
  };
  const polling = poll();

  // The never-used key, asked once the flood is under way, then again until it is served.
  await sleep(2000);
  // Not from the flooding address: there, a key never seen to succeed meets the spent budget.
  const freshFrom = '203.0.113.99';
  const freshAsked = performance.now();
  const freshFirst = await ask(run.agent, run.gatewayUrl, run.freshKey, freshFrom);
  let freshFirst200Ms = freshFirst.status === 200 ? freshFirst.ms : undefined;
  while (freshFirst200Ms === undefined && performance.now() < endsAt) {
    await sleep(POLL_MS);
    const again = await ask(run.agent, run.gatewayUrl, run.freshKey, freshFrom);
    if (again.status === 200) freshFirst200Ms = performance.now() - freshAsked;
  }

  const [floodResult] = await Promise.all([flood, polling]);
  clearInterval(rssTimer);
  const seconds = (performance.now() - started) / 1000;
  const verifies = run.slowKeys.verifyCalls() - verifiesBefore;
  const logMb = (run.gateway.logBytes() - logBefore) / 1024 / 1024;

  console.log(`\nflood from ${phase}: ${FLOOD_CONNECTIONS} connections of made-up keys for ${FLOOD_SECONDS} s`);
  const floodStatuses = new Map(Object.entries(floodResult.statuses).map(([status, count]) => [Number(status), count]));
  console.log(
    `  flood requests ${floodResult.sent} (${Math.round(floodResult.sent / seconds)}/s), answers ${statusSummary(floodStatuses)}`,
  );
  for (const [name, answers] of Object.entries(legitAnswers)) {
    const statuses = new Map<number, number>();
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
    const p99 = percentile(
      answers.map((answer) => answer.ms),
      99,
    );
    console.log(
      `  cached key, organization ${name === 'ceiling' ? 'with' : 'without'} a ceiling: ${statusSummary(statuses)}, p99 ${p99.toFixed(1)} ms`,
    );
  }
  console.log(
    `  never-used key: first answer ${freshFirst.status}${freshFirst.retryAfter ? ` (Retry-After ${freshFirst.retryAfter})` : ''} in ${freshFirst.ms.toFixed(0)} ms; ` +
      (freshFirst200Ms === undefined ? 'no 200 during the flood' : `first 200 after ${freshFirst200Ms.toFixed(0)} ms`),
  );
  console.log(`  key service verify calls ${verifies} (${(verifies / seconds).toFixed(1)}/s)`);
  console.log(`  log growth ${logMb.toFixed(2)} MB (${((logMb / seconds) * 60).toFixed(2)} MB/min)`);
  console.log(`  gateway RSS max ${(rssMaxKb / 1024).toFixed(0)} MB`);
}

function statusSummary(statuses: Map<number, number>): string {
  return [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}×${count}`)
    .join(' ');
}

function ask(agent: Agent, gatewayUrl: string, key: string, forwardedFor: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      `${gatewayUrl}${PATH}`,
      { agent, headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor } },
      (res) => {
        res.resume();
        res.on('end', () => {
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter, ms: performance.now() - started });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The anonymous clients, in their own process (floodClients.ts), for FLOOD_SECONDS. */
async function runFloodClients(
  gatewayUrl: string,
  addresses: 'one' | 'many',
): Promise<{ sent: number; statuses: Record<string, number> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      fileURLToPath(new URL('./floodClients.ts', import.meta.url)),
      gatewayUrl,
      PATH,
      addresses,
      String(FLOOD_CONNECTIONS),
      String(FLOOD_SECONDS),
    ],
    { cwd: REPO, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  await waitForExit(child);
  return JSON.parse(output) as { sent: number; statuses: Record<string, number> };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface DelayingProxy {
  readonly url: string;
  readonly server: Server;
  verifyCalls(): number;
}

/** The key service as seen through a slower network: every verify answered after `delayMs`. */
async function delayingProxy(targetUrl: string, delayMs: number): Promise<DelayingProxy> {
  const target = new URL(targetUrl);
  let verifyCalls = 0;
  const server = createServer((req, res) => {
    const isVerify = req.method === 'POST' && (req.url ?? '').startsWith('/v1/keys/verify');
    if (isVerify) verifyCalls += 1;
    const forward = () => {
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer: IncomingMessage) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    if (isVerify) setTimeout(forward, delayMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, verifyCalls: () => verifyCalls };
}

export interface BuiltGateway {
  readonly url: string;
  logBytes(): number;
  rssKb(): number;
  stop(): Promise<void>;
}

/** The gateway as `npm start` runs it: built once, then `node dist/main.js`, its log on stdout. */
export async function startBuiltGateway(env: Record<string, string>): Promise<BuiltGateway> {
  await waitForExit(spawn('npm', ['run', '--silent', 'build'], { cwd: REPO, stdio: 'inherit' }));
  const port = await freePort();
  const child = spawn(process.execPath, ['--enable-source-maps', '--heap-growing-percent=50', 'dist/main.js'], {
    cwd: REPO,
    env: { PATH: process.env.PATH, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let logBytes = 0;
  let listening = false;
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      logBytes += chunk.length;
      if (!listening && chunk.toString('utf8').includes('listening')) {
        listening = true;
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}) before listening`)));
  });
  await ready;
  return {
    url: `http://127.0.0.1:${port}`,
    logBytes: () => logBytes,
    rssKb: () => {
      try {
        const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        return Number(match?.[1] ?? 0);
      } catch (_err: unknown) {
        return 0;
      }
    },
    async stop() {
      if (child.exitCode !== null) return;
      const exited = waitForExit(child);
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function waitForExit(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
