import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import { type BuiltGateway, startBuiltGateway } from './floodScenario.js';

/**
 * `npm run bench -- --only memory` (issue 12, "memory bounded by design"): the RSS of one
 * gateway as `npm start` runs it (defaults: CACHE_MAX_MB, MAX_CONNECTIONS) through
 * - one key cycling the spelling of `site` (ASCII case) and the parameter values of every
 *   route, from CYCLING_CLIENTS connections at once, for CYCLING_SECONDS;
 * - IDLE_CONNECTIONS keep-alive connections, each idle after one answer, for IDLE_SECONDS.
 * The flood of made-up keys has its own scenario (`--only flood`), which prints its RSS too.
 */

const CYCLING_CLIENTS = 32;
const IDLE_CONNECTIONS = 2000;
const RSS_SAMPLE_MS = 200;

export interface MemoryScenarioOptions {
  readonly cyclingSeconds?: number;
  readonly idleSeconds?: number;
}

/** org_demo's domains in the local platform (src/local/seedData.ts). */
const DOMAINS = ['acme.com', 'acme.org', 'bigcatalog.shop'];
/** Every route with the parameters it reads and the largest value each takes. */
const ROUTES: ReadonlyArray<{ path: string; params: Readonly<Record<string, number>> }> = [
  { path: '/v1/api/keywords', params: { limit: 500 } },
  { path: '/v1/api/rankings', params: { days: 90, limit: 100 } },
  { path: '/v1/api/ai-visibility/summary', params: {} },
  { path: '/v1/api/audit-issues', params: {} },
];

export async function runMemoryScenario(options: MemoryScenarioOptions = {}): Promise<void> {
  const cyclingSeconds = options.cyclingSeconds ?? 30;
  const idleSeconds = options.idleSeconds ?? 10;
  const dataDir = mkdtempSync(join(tmpdir(), 'gateway-memory-'));
  const upstreams = await startLocalUpstreams({ dataDir });
  const gateway = await startBuiltGateway({
    PLATFORM_GRAPHQL_URL: upstreams.platform.url,
    PLATFORM_TOKEN: upstreams.platform.token,
    KEY_SERVICE_URL: upstreams.keyService.url,
    KEY_SERVICE_TOKEN: upstreams.keyService.token,
    RATE_LIMIT_REQUESTS: '1000000',
  });
  try {
    const startedRss = gateway.rssKb();
    console.log(`\nmemory: gateway RSS once started ${mb(startedRss)} MB`);
    await cyclingPhase(gateway, upstreams.demoKey, cyclingSeconds);
    await idlePhase(gateway, idleSeconds);
  } finally {
    await gateway.stop();
    await upstreams.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function cyclingPhase(gateway: BuiltGateway, key: string, seconds: number): Promise<void> {
  const sampler = rssSampler(gateway);
  const agent = new Agent({ keepAlive: true, maxSockets: CYCLING_CLIENTS });
  const statuses = new Map<number, number>();
  const targets = new Set<string>();
  const endsAt = performance.now() + seconds * 1000;
  const client = async () => {
    while (performance.now() < endsAt) {
      const target = randomTarget();
      targets.add(target);
      const status = await get(agent, `${gateway.url}${target}`, { authorization: `Bearer ${key}` });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: CYCLING_CLIENTS }, client));
  agent.destroy();
  const sent = [...statuses.values()].reduce((sum, count) => sum + count, 0);
  console.log(`one key cycling site spellings and parameter values: ${CYCLING_CLIENTS} connections for ${seconds} s`);
  console.log(
    `  requests ${sent} (${Math.round(sent / seconds)}/s), ${targets.size} distinct URLs, answers ${summary(statuses)}`,
  );
  console.log(`  gateway RSS max ${mb(sampler.stop())} MB`);
}

async function idlePhase(gateway: BuiltGateway, seconds: number): Promise<void> {
  const sampler = rssSampler(gateway);
  const { hostname, host, port } = new URL(gateway.url);
  const sockets: Socket[] = [];
  let answered = 0;
  let closed = 0;
  await Promise.all(
    Array.from(
      { length: IDLE_CONNECTIONS },
      () =>
        new Promise<void>((resolve) => {
          const socket = connect(Number(port), hostname);
          sockets.push(socket);
          socket.once('data', () => {
            answered += 1;
            resolve();
          });
          socket.once('close', () => {
            closed += 1;
            resolve();
          });
          socket.once('error', () => resolve()); // counted by 'close', which follows
          socket.write(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n\r\n`);
        }),
    ),
  );
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const closedByGateway = closed;
  for (const socket of sockets) socket.destroy();
  console.log(`${IDLE_CONNECTIONS} keep-alive connections, idle after one answer, for ${seconds} s`);
  console.log(
    `  answered ${answered}, closed by the gateway ${closedByGateway}; gateway RSS max ${mb(sampler.stop())} MB`,
  );
}

/**
 * A request target of one route for a random ASCII-case spelling of a domain: half of them
 * with the default parameters (spellings of one answer), half with random parameter values.
 */
function randomTarget(): string {
  const route = pick(ROUTES);
  const domain = pick(DOMAINS);
  const site = [...domain].map((c) => (Math.random() < 0.5 ? c.toUpperCase() : c)).join('');
  const query = new URLSearchParams({ site });
  if (Math.random() < 0.5) {
    for (const [name, max] of Object.entries(route.params))
      query.set(name, String(1 + Math.floor(Math.random() * max)));
  }
  return `${route.path}?${query.toString()}`;
}

function pick<T>(list: readonly T[]): T {
  const item = list[Math.floor(Math.random() * list.length)];
  if (item === undefined) throw new Error('empty list');
  return item;
}

function get(agent: Agent, url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

/** The highest RSS seen from now until stop(), in kB. */
function rssSampler(gateway: BuiltGateway): { stop(): number } {
  let maxKb = gateway.rssKb();
  const timer = setInterval(() => (maxKb = Math.max(maxKb, gateway.rssKb())), RSS_SAMPLE_MS);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(maxKb, gateway.rssKb());
    },
  };
}

function summary(statuses: Map<number, number>): string {
  return [...statuses.entries()]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}×${count}`)
    .join(' ');
}

const mb = (kb: number) => (kb / 1024).toFixed(0);
