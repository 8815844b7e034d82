import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { runLoad } from './load.js';

/**
 * Two builds of the gateway side by side, to show that a change made the warm path no
 * worse: each directory is a checkout whose `npm run build` has been run (an older commit
 * in a git worktree with its own `npm ci`). Each gateway runs as `npm start` runs it, on its
 * own embedded upstreams, and takes the same warm load in alternating rounds; the figure is
 * the server's CPU per request (its utime + stime from /proc, so Linux only), with the
 * per-round ratio B ÷ A, since a shared machine moves both sides together within a round.
 *
 *   node --import tsx test/bench/compareBuilds.ts <checkout A> <checkout B> [--rounds 6] [--seconds 4]
 */

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '6' }, seconds: { type: 'string', default: '4' } },
});
if (positionals.length !== 2)
  throw new Error('usage: compareBuilds.ts <checkout A> <checkout B> [--rounds N] [--seconds S]');
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONNECTIONS = 32;
/** The bench's warm URL: a cache hit after the first call. */
const WARM_PATH = '/v1/api/keywords?site=acme.com&limit=5';
/** Kernel clock ticks per second as /proc reports CPU time (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

interface Gateway {
  readonly name: string;
  readonly child: ChildProcess;
  readonly url: string;
  readonly key: string;
  readonly scratch: string;
}

function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / TICKS_PER_SECOND;
}

/** Starts `dir`'s dist/main.js with the start script's flags; resolves once its banner names the demo key. */
function start(dir: string, port: number): Promise<Gateway> {
  const scratch = mkdtempSync(join(tmpdir(), 'compare-builds-'));
  const child = spawn('node', ['--enable-source-maps', '--heap-growing-percent=50', 'dist/main.js'], {
    cwd: dir,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOCAL_DATA_DIR: join(scratch, 'data'),
      USAGE_SPOOL_DIR: join(scratch, 'spool'),
      // Measured, never refused: a 429 would end the comparison.
      RATE_LIMIT_REQUESTS: '1000000',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((done, fail) => {
    let banner = '';
    const onData = (chunk: Buffer) => {
      banner += chunk.toString();
      const key = /atl_[A-Za-z0-9_]+/.exec(banner)?.[0];
      if (key === undefined) return;
      child.stdout?.off('data', onData);
      child.stdout?.resume(); // the request log: read and dropped
      done({ name: dir, child, url: `http://127.0.0.1:${port}`, key, scratch });
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => fail(new Error(`${dir}: gateway exited with ${code} before its banner`)));
  });
}

async function measure(gateway: Gateway, seconds: number): Promise<number> {
  const pid = gateway.child.pid;
  if (pid === undefined) throw new Error(`${gateway.name}: no pid`);
  const before = cpuMicros(pid);
  const result = await runLoad({
    url: `${gateway.url}${WARM_PATH}`,
    connections: CONNECTIONS,
    seconds,
    headers: { authorization: `Bearer ${gateway.key}` },
  });
  if (result.non2xx + result.errors + result.timeouts > 0) throw new Error(`${gateway.name}: answers outside 2xx`);
  return (cpuMicros(pid) - before) / result.requests;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const gateways = [
  await start(resolve(positionals[0] ?? ''), 4101),
  await start(resolve(positionals[1] ?? ''), 4102),
] as const;
try {
  for (const gateway of gateways) await measure(gateway, 2); // warm-up: caches, JIT
  const perRequest: [number[], number[]] = [[], []];
  const sides = [0, 1] as const;
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts with the other side, so neither always follows the same one.
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
      const micros = await measure(gateways[side], SECONDS);
      perRequest[side].push(micros);
      console.log(`round ${round + 1}/${ROUNDS} ${'AB'[side]}: ${micros.toFixed(1)} µs of CPU per request`);
    }
  }
  const ratios = perRequest[1].map((b, round) => b / (perRequest[0][round] ?? NaN));
  console.log(`A ${gateways[0].name}: median ${median(perRequest[0]).toFixed(1)} µs per request`);
  console.log(`B ${gateways[1].name}: median ${median(perRequest[1]).toFixed(1)} µs per request`);
  console.log(`B ÷ A per round: ${ratios.map((r) => r.toFixed(2)).join(' ')}; median ${median(ratios).toFixed(2)}`);
} finally {
  for (const gateway of gateways) {
    gateway.child.kill('SIGTERM');
    rmSync(gateway.scratch, { recursive: true, force: true });
  }
}
