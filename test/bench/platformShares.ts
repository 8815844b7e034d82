import { parseArgs } from 'node:util';
import Bottleneck from 'bottleneck';
import { createOrganizationShares, PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { median, percentile } from './stats.js';

/**
 * `node --import tsx test/bench/platformShares.ts`: what the platform shares cost per call,
 * as built (src/platform/organizationShares.ts, a fair queue) and as one bottleneck limiter
 * with the same places and waiting room (PLATFORM_SHARES; first come, first served), beside
 * the call made with no shares at all. The platform call is stood in for by one turn of the
 * event loop (setImmediate), so what is measured is the shares' own work and waiting.
 *
 * - sequential: one call at a time; CPU µs per call over the bare call's, and the added p50
 *   (the call's time through the shares minus the bare call's);
 * - concurrent: 8 organizations × 8 callers, each making calls back to back (64 in flight,
 *   within every limit, so nothing is refused); CPU µs per call over the bare call's.
 *
 * Interleaved rounds; medians over the rounds. The figures and the decision they support are
 * in test/bench/README.md ("Platform shares").
 */

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    calls: { type: 'string', default: '1000' },
  },
});
const ROUNDS = Number(args.rounds);
const CALLS = Number(args.calls);
const ORGANIZATIONS = 8;
const CALLERS_PER_ORGANIZATION = 8;
const WARMUP_CALLS = 200;

type Run = (organizationId: string, call: () => Promise<void>) => Promise<void>;

const platformCall = () => new Promise<void>((resolve) => setImmediate(resolve));

function asBuilt(): Run {
  const shares = createOrganizationShares();
  return (organizationId, call) => shares.run(organizationId, call, performance.now() + 60_000);
}

/** The same places and waiting room as one bottleneck limiter: no turns between organizations. */
function bottleneckLimiter(): Run {
  const limiter = new Bottleneck({
    maxConcurrent: PLATFORM_SHARES.inFlight,
    highWater: PLATFORM_SHARES.waiting,
    strategy: Bottleneck.strategy.OVERFLOW,
  });
  return (_organizationId, call) => limiter.schedule(call);
}

const bare: Run = (_organizationId, call) => call();

const VARIANTS = { bare, 'as built (fair queue)': asBuilt(), 'bottleneck limiter': bottleneckLimiter() } as const;
type Variant = keyof typeof VARIANTS;

async function sequential(run: Run, calls = CALLS): Promise<{ cpuMicros: number; p50Ms: number }> {
  const times: number[] = [];
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await run(`org_${i % ORGANIZATIONS}`, platformCall);
    times.push(performance.now() - started);
  }
  const cpu = process.cpuUsage(before);
  return { cpuMicros: (cpu.user + cpu.system) / calls, p50Ms: percentile(times, 50) };
}

async function concurrent(run: Run): Promise<number> {
  const callers = ORGANIZATIONS * CALLERS_PER_ORGANIZATION;
  const perCaller = Math.ceil(CALLS / callers);
  const before = process.cpuUsage();
  await Promise.all(
    Array.from({ length: callers }, async (_, caller) => {
      for (let i = 0; i < perCaller; i++) await run(`org_${caller % ORGANIZATIONS}`, platformCall);
    }),
  );
  const cpu = process.cpuUsage(before);
  return (cpu.user + cpu.system) / (perCaller * callers);
}

async function main(): Promise<void> {
  const names = Object.keys(VARIANTS) as Variant[];
  const figures = new Map<Variant, { cpu: number[]; p50: number[]; load: number[] }>(
    names.map((name) => [name, { cpu: [], p50: [], load: [] }]),
  );
  for (const name of names) await sequential(VARIANTS[name], WARMUP_CALLS);
  for (let round = 0; round < ROUNDS; round++) {
    // Each round starts one variant later, so none always runs first.
    const order = names.map((_, i) => names[(i + round) % names.length] as Variant);
    for (const name of order) {
      const entry = figures.get(name);
      if (!entry) continue;
      const { cpuMicros, p50Ms } = await sequential(VARIANTS[name]);
      entry.cpu.push(cpuMicros);
      entry.p50.push(p50Ms);
      entry.load.push(await concurrent(VARIANTS[name]));
    }
  }
  const base = figures.get('bare');
  if (!base) return;
  process.stdout.write(`${ROUNDS} rounds × ${CALLS} calls; medians over the rounds, (+ over the bare call)\n`);
  for (const name of names) {
    const entry = figures.get(name);
    if (!entry) continue;
    const cpu = median(entry.cpu);
    const p50 = median(entry.p50);
    const load = median(entry.load);
    process.stdout.write(
      `${name.padEnd(20)} sequential: ${cpu.toFixed(1).padStart(7)} µs CPU/call (+${(cpu - median(base.cpu)).toFixed(1)}), ` +
        `p50 ${(p50 * 1000).toFixed(0).padStart(5)} µs (+${((p50 - median(base.p50)) * 1000).toFixed(0)})   ` +
        `concurrent: ${load.toFixed(1).padStart(7)} µs CPU/call (+${(load - median(base.load)).toFixed(1)})\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
