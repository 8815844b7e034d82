import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startUpstreams } from './benchChild.js';
import type { UpstreamsReady } from './childMessages.js';
import { runLoad } from './load.js';
import { median, steady, WARMUP, type WarmupSlice } from './stats.js';

/**
 * Two builds of the gateway side by side, to show that a change made it no worse: each
 * directory is a checkout whose `npm run build` has been run (an older commit unpacked
 * with its own `npm ci`). Both gateways run as `npm start` runs them, against one local
 * platform and key service in a process of their own (this checkout's), so each server's
 * CPU is its own work alone. They take the same load in alternating rounds; the figure is
 * the server's CPU per request (its utime + stime from /proc, so Linux only), with the
 * per-round ratio B ÷ A, since a shared machine moves both sides together within a round.
 *
 * Warm (default): 32 connections on the bench's URL, a cache hit after the first call.
 * `--cold`: the same URL with CACHE_TTL_SECONDS=0 on one connection, so every request is
 * a miss and a platform call, as the bench's cold rows. `--together` loads both sides at the same
 * time rather than one after the other, which on a busy machine keeps the ratio far steadier.
 *
 *   node --import tsx test/bench/compareBuilds.ts <checkout A> <checkout B> [--cold] [--together] [--rounds 6] [--seconds 4]
 */

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '4' },
    cold: { type: 'boolean', default: false },
    together: { type: 'boolean', default: false },
  },
});
if (positionals.length !== 2)
  throw new Error('usage: compareBuilds.ts <checkout A> <checkout B> [--cold] [--together] [--rounds N] [--seconds S]');
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const COLD = values.cold;
const TOGETHER = values.together;
const CONNECTIONS = COLD ? 1 : 32;
/** The bench's warm URL: a cache hit after the first call (with the cache on). */
const BENCH_PATH = '/v1/api/keywords?site=acme.com&limit=5';
/** Kernel clock ticks per second as /proc reports CPU time (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;
const START_TIMEOUT_MS = 30_000;

interface Gateway {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly scratch: string;
}

function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
}

/** A port free right now (the machine is shared: fixed ports collide). */
function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

/** Starts `dir`'s dist/main.js with the start script's flags; resolves once it answers /healthz. */
async function start(dir: string, upstreams: UpstreamsReady): Promise<Gateway> {
  const port = await freePort();
  const scratch = mkdtempSync(join(tmpdir(), 'compare-builds-'));
  const child = spawn('node', ['--enable-source-maps', '--heap-growing-percent=50', 'dist/main.js'], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      PLATFORM_GRAPHQL_URL: upstreams.platform.url,
      PLATFORM_TOKEN: upstreams.platform.token,
      KEY_SERVICE_URL: upstreams.keyService.url,
      KEY_SERVICE_TOKEN: upstreams.keyService.token,
      USAGE_SPOOL_DIR: join(scratch, 'spool'),
      // Measured, never refused: a 429 would end the comparison.
      RATE_LIMIT_REQUESTS: '1000000',
      LOG_LEVEL: 'info',
      ...(COLD ? { CACHE_TTL_SECONDS: '0' } : {}),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  child.stdout?.resume(); // the request log: read and dropped
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${dir}: gateway exited with ${child.exitCode}`);
    const up = await fetch(`${url}/healthz`).then(
      (res) => res.ok,
      () => false,
    );
    if (up) return { name: dir, child, url, scratch };
    await new Promise((done) => setTimeout(done, 200));
  }
  child.kill('SIGKILL');
  throw new Error(`${dir}: no /healthz within ${START_TIMEOUT_MS} ms`);
}

/** The CPU µs per request of `seconds` of load on `gateway`, and how many requests it served. */
async function measure(gateway: Gateway, key: string, seconds: number): Promise<WarmupSlice> {
  const pid = gateway.child.pid;
  if (pid === undefined) throw new Error(`${gateway.name}: no pid`);
  const before = cpuMicros(pid);
  const result = await runLoad({
    url: `${gateway.url}${BENCH_PATH}`,
    connections: CONNECTIONS,
    seconds,
    headers: { authorization: `Bearer ${key}` },
  });
  if (result.non2xx + result.errors + result.timeouts > 0)
    throw new Error(
      `${gateway.name}: answers outside 2xx ${JSON.stringify(result.refusedByStatus)}, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  return { micros: (cpuMicros(pid) - before) / result.requests, requests: result.requests };
}

const spread = (values: number[]): string => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

/**
 * Both sides loaded (together with --together, else in turn) in slices until each one's CPU per request
 * is steady: a cold miss at one connection takes ten seconds or more to reach its steady figure.
 */
async function warmUp(sides: readonly Gateway[], key: string): Promise<void> {
  const slices: WarmupSlice[][] = sides.map(() => []);
  for (let slice = 1; slice <= WARMUP.maxSlices && !slices.every(steady); slice++) {
    const together = TOGETHER ? await Promise.all(sides.map((side) => measure(side, key, WARMUP.sliceSeconds))) : [];
    for (const [i, side] of sides.entries())
      slices[i]?.push(together[i] ?? (await measure(side, key, WARMUP.sliceSeconds)));
  }
  for (const [i, side] of sides.entries()) {
    const trail = slices[i] ?? [];
    console.log(
      `warm-up ${'AB'[i]} ${side.name}: ${trail.map((slice) => slice.micros.toFixed(0)).join(' → ')} µs per request${steady(trail) ? '' : ' (not steady)'}`,
    );
  }
}

const dataDir = mkdtempSync(join(tmpdir(), 'compare-builds-upstreams-'));
const upstreams = await startUpstreams(dataDir);
const gateways: Gateway[] = [];
try {
  gateways.push(await start(resolve(positionals[0] ?? ''), upstreams.ready));
  gateways.push(await start(resolve(positionals[1] ?? ''), upstreams.ready));
  const key = upstreams.ready.demoKey;
  for (const gateway of gateways) {
    // One call first: the key is verified and the answer cached before many connections ask at once.
    const first = await fetch(`${gateway.url}${BENCH_PATH}`, { headers: { authorization: `Bearer ${key}` } });
    if (first.status !== 200) throw new Error(`${gateway.name}: first call answered ${first.status}`);
    await first.arrayBuffer();
  }
  await warmUp(gateways, key);
  const perRequest: [number[], number[]] = [[], []];
  console.log(`${COLD ? 'cold (cache off, 1 connection)' : 'warm (cache hits, 32 connections)'}`);
  for (let round = 0; round < ROUNDS; round++) {
    // --together: both sides loaded at once, so a shared machine's load falls on both alike.
    // Otherwise each round starts with the other side, so neither always follows the same one.
    const order: ReadonlyArray<0 | 1> = round % 2 === 0 ? [0, 1] : [1, 0];
    const results = TOGETHER
      ? await Promise.all(order.map((side) => measure(gateways[side] as Gateway, key, SECONDS)))
      : [];
    for (const [at, side] of order.entries()) {
      const micros = (results[at] ?? (await measure(gateways[side] as Gateway, key, SECONDS))).micros;
      perRequest[side].push(micros);
      console.log(`round ${round + 1}/${ROUNDS} ${'AB'[side]}: ${micros.toFixed(1)} µs of CPU per request`);
    }
  }

  const ratios = perRequest[1].map((b, round) => b / (perRequest[0][round] ?? NaN));
  const differences = perRequest[1].map((b, round) => b - (perRequest[0][round] ?? NaN));
  console.log(`A ${gateways[0]?.name}: median ${median(perRequest[0]).toFixed(1)} µs per request`);
  console.log(`B ${gateways[1]?.name}: median ${median(perRequest[1]).toFixed(1)} µs per request`);
  console.log(`B − A per round: median ${median(differences).toFixed(1)} µs (${spread(differences)})`);
  console.log(
    `B ÷ A per round: ${ratios.map((r) => r.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(2)} (${spread(ratios)})`,
  );
} finally {
  for (const gateway of gateways) {
    gateway.child.kill('SIGTERM');
    rmSync(gateway.scratch, { recursive: true, force: true });
  }
  await upstreams.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
