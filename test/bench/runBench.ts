import {
  createReadStream,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BenchChild } from './benchChild.js';
import { BENCH_RATE_LIMIT, type BenchSetup, startBench, WARM_PATH, WARM_VARIABLES } from './benchSetup.js';
import { CALIBRATION_WORK_MICROS, type GatewayReady, type MemoryReport } from './childMessages.js';
import { concurrentIdentical, get, metricsText } from './httpCalls.js';
import { type LoadResult, runLoad } from './load.js';
import {
  type CpuProfile,
  formatRequestWork,
  formatSummary,
  type RequestWork,
  summarizeProfile,
  workPerRequest,
} from './profileSummary.js';
import { type BenchFigures, type ColdFloor, connectionsLabel, markdownTable, verdicts } from './report.js';
import { sofaPath } from './sofaServer.js';
import { median, percentile, steady, sumOfSamples, WARMUP, type WarmupSlice } from './stats.js';

/**
 * `npm run bench`: how close the gateway runs to what it cannot beat (issue 7).
 * Interleaved rounds of bounded autocannon runs; medians over the rounds; a table
 * with targets; results in bench-results/latest.json. What it measures and why: test/bench/README.md.
 */

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    'cold-connections': { type: 'string', default: '1' },
    profile: { type: 'boolean', default: false },
    'no-redis': { type: 'boolean', default: false },
    'no-tsx': { type: 'boolean', default: false },
    only: { type: 'string' },
    'node-flags': { type: 'string' },
  },
});

const ROUNDS = boundedInt(args.rounds, 1, 20, 'rounds');
const SECONDS = boundedInt(args.seconds, 1, 30, 'seconds');
const CONNECTIONS = boundedInt(args.connections, 1, 512, 'connections');
const COLD_CONNECTIONS = boundedInt(args['cold-connections'], 1, 64, 'cold-connections');
const COLD = connectionsLabel(COLD_CONNECTIONS);
/** Cold goodput beside SOFA's is compared with this many connections, calls overlapping (issue 38). */
const MANY_COLD_CONNECTIONS = 50;
const MANY_COLD = connectionsLabel(MANY_COLD_CONNECTIONS);
/**
 * Unmeasured load on each target just before each of its rounds. Idle while the others ran (about a minute), a
 * target comes back slower: a cold miss measured 993 µs in its first round against 531 at the end of its warm-up.
 */
const ROUND_SETTLE_SECONDS = 1;
const COLLAPSE_CONCURRENCY = 100;
const COLLAPSE_TRIALS = 5;
const MEMORY_SAMPLE_MS = 200;
const REPO = fileURLToPath(new URL('../../', import.meta.url));
const RESULTS_DIR = join(REPO, 'bench-results');

type TargetId =
  | 'node'
  | 'koa'
  | 'koa-work-10'
  | 'koa-work-40'
  | 'gateway'
  | 'gateway-warn'
  | 'gateway-traced'
  | 'gateway-untraced'
  | 'gateway-redis'
  | 'gateway-tsx'
  | 'cold-gateway'
  | 'cold-proxy'
  | 'cold-stack'
  | 'cold-platform'
  | 'cold-gateway-many'
  | 'cold-proxy-many'
  | 'cold-sofa-many';

interface Target {
  readonly id: TargetId;
  readonly label: string;
  readonly child: BenchChild<unknown> | null;
  run(seconds: number): Promise<LoadResult>;
}

interface RunRecord {
  readonly round: number;
  readonly target: TargetId;
  readonly requests: number;
  /** Goodput: 2xx answers per second. */
  readonly requestsPerSecond: number;
  /** Answers outside 2xx, shown apart from the goodput. */
  readonly refused: number;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  /** CPU time (user + system) the server process spent per answered request, µs. */
  readonly cpuMicrosPerRequest?: number;
  /** The server process's CPU time over the run's wall time: near 1.0 means one core fully busy. */
  readonly cpuBusy?: number;
  /** Time its event loop was busy per answered request, µs (main thread only, unlike CPU time). */
  readonly loopMicrosPerRequest?: number;
}

function runFigures(
  result: Pick<LoadResult, 'requestsPerSecond' | 'refusedByStatus'>,
  latency: { p50Ms?: number; p99Ms?: number },
  cpu: { cpuMicrosPerRequest?: number; cpuBusy?: number; loopMicrosPerRequest?: number },
): string {
  const parts = [`${Math.round(result.requestsPerSecond).toLocaleString('en-US').padStart(8)} req/s (2xx)`];
  const refused = Object.entries(result.refusedByStatus);
  if (refused.length > 0) parts.push(`refused ${refused.map(([status, count]) => `${count} × ${status}`).join(', ')}`);
  if (latency.p50Ms !== undefined && latency.p99Ms !== undefined)
    parts.push(`p50 ${latency.p50Ms.toFixed(3)} ms  p99 ${latency.p99Ms.toFixed(3)} ms`);
  if (cpu.cpuMicrosPerRequest !== undefined && cpu.cpuBusy !== undefined) {
    parts.push(
      `server CPU ${cpu.cpuMicrosPerRequest.toFixed(0)} µs/req (${Math.round(cpu.cpuBusy * 100)} % of a core)`,
    );
  }
  if (cpu.loopMicrosPerRequest !== undefined) parts.push(`loop busy ${cpu.loopMicrosPerRequest.toFixed(0)} µs/req`);
  return parts.join('  ');
}

const log = (line: string) => process.stdout.write(`${line}\n`);

function boundedInt(text: string | undefined, min: number, max: number, name: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new Error(`--${name} must be a whole number from ${min} to ${max}`);
  return value;
}

function workUrl(setup: BenchSetup, micros: number): string {
  const url = setup.bare.ready.koaWithWorkUrls[micros];
  if (url === undefined) throw new Error(`no calibration server for ${micros} µs`);
  return url;
}

function targetsOf(setup: BenchSetup): Target[] {
  const warm = (
    id: TargetId,
    label: string,
    url: string,
    child: BenchChild<unknown> | null,
    headers: Record<string, string> = {},
  ): Target => ({
    id,
    label,
    child,
    run: (seconds) => runLoad({ url: `${url}${WARM_PATH}`, connections: CONNECTIONS, seconds, headers }),
  });
  const gw = (child: BenchChild<GatewayReady>) => child.ready.url;
  const targets: Target[] = [
    warm('node', 'bare node:http', setup.bare.ready.nodeUrl, setup.bare),
    warm('koa', 'bare Koa', setup.bare.ready.koaUrl, setup.bare),
    ...CALIBRATION_WORK_MICROS.map((micros) =>
      warm(`koa-work-${micros}`, `bare Koa + ${micros} µs of work per request`, workUrl(setup, micros), setup.bare),
    ),
    warm('gateway', 'gateway warm (local limiter)', gw(setup.gateway), setup.gateway, setup.authHeaders),
    warm(
      'gateway-warn',
      'gateway warm (LOG_LEVEL=warn)',
      gw(setup.gatewayWarnLogs),
      setup.gatewayWarnLogs,
      setup.authHeaders,
    ),
    warm(
      'gateway-untraced',
      'gateway warm (tracing compiled out)',
      gw(setup.gatewayUntraced),
      setup.gatewayUntraced,
      setup.authHeaders,
    ),
    warm(
      'gateway-traced',
      'gateway warm (tracing on, all sampled)',
      gw(setup.gatewayTraced),
      setup.gatewayTraced,
      setup.authHeaders,
    ),
  ];
  if (setup.gatewayRedis) {
    targets.push(
      warm(
        'gateway-redis',
        'gateway warm (Redis limiter)',
        gw(setup.gatewayRedis),
        setup.gatewayRedis,
        setup.authHeaders,
      ),
    );
  }
  if (setup.gatewayTsx) {
    targets.push(
      warm(
        'gateway-tsx',
        'gateway warm, through tsx (how npm start ran before)',
        gw(setup.gatewayTsx),
        setup.gatewayTsx,
        setup.authHeaders,
      ),
    );
  }
  /** A proxy of the bare servers' process, loaded as the cold gateway is. */
  const coldFloorTarget = (id: TargetId, name: string, url: string): Target => ({
    id,
    label: `${name} (${COLD})`,
    child: setup.bare,
    run: (seconds) =>
      runLoad({ url: `${url}${WARM_PATH}`, connections: COLD_CONNECTIONS, seconds, recordLatencies: true }),
  });
  // Cold: one connection by default, so each figure is the time of one call, not of a queue;
  // --cold-connections shows what the CPU per miss becomes when calls overlap.
  targets.push(
    {
      id: 'cold-gateway',
      label: `gateway cold (no cache, ${COLD})`,
      child: setup.gatewayCold,
      run: (seconds) =>
        runLoad({
          url: `${gw(setup.gatewayCold)}${WARM_PATH}`,
          connections: COLD_CONNECTIONS,
          seconds,
          headers: setup.authHeaders,
          recordLatencies: true,
        }),
    },
    // The floors of a cold request: the same two HTTP exchanges as the gateway's and no other
    // work; then the same on the gateway's stack (Koa, the call through the gateway's transport, its data read).
    coldFloorTarget('cold-proxy', 'bare proxy: node:http + one undici call', setup.bare.ready.proxyUrl),
    coldFloorTarget('cold-stack', 'stack proxy: Koa + the platform call', setup.bare.ready.stackProxyUrl),
    {
      id: 'cold-platform',
      label: `direct platform call (${COLD})`,
      child: setup.upstreams,
      run: (seconds) =>
        runLoad({
          url: setup.platformCall.url,
          method: 'POST',
          headers: setup.platformCall.headers,
          body: setup.platformCall.body,
          connections: COLD_CONNECTIONS,
          seconds,
          recordLatencies: true,
        }),
    },
    // Goodput with calls overlapping: the gateway without its cache beside SOFA over the same schema.
    {
      id: 'cold-gateway-many',
      label: `gateway cold (no cache, ${MANY_COLD})`,
      child: setup.gatewayCold,
      run: (seconds) =>
        runLoad({
          url: `${gw(setup.gatewayCold)}${WARM_PATH}`,
          connections: MANY_COLD_CONNECTIONS,
          seconds,
          headers: setup.authHeaders,
        }),
    },
    // The floor of that goodput: the bare proxy making the same platform call with calls overlapping.
    {
      id: 'cold-proxy-many',
      label: `bare proxy: node:http + one undici call (${MANY_COLD})`,
      child: setup.bare,
      run: (seconds) =>
        runLoad({ url: `${setup.bare.ready.proxyUrl}${WARM_PATH}`, connections: MANY_COLD_CONNECTIONS, seconds }),
    },
    {
      id: 'cold-sofa-many',
      label: `SOFA over the platform's schema (${MANY_COLD})`,
      child: setup.bare,
      run: (seconds) =>
        runLoad({
          url: `${setup.bare.ready.sofaUrl}${sofaPath(WARM_VARIABLES.organizationId)}`,
          connections: MANY_COLD_CONNECTIONS,
          seconds,
        }),
    },
  );
  const only = args.only?.split(',').map((id) => id.trim());
  return only ? targets.filter((target) => only.includes(target.id)) : targets;
}

/** The memory report with the highest RSS seen per target (heap figures say what the RSS holds). */
const peakMemory = new Map<string, MemoryReport>();

/**
 * Samples a child's RSS while `work` runs, and reads its CPU time before and after:
 * returns the work's result, the highest RSS seen, and the CPU µs the child spent.
 */
async function measured<T>(
  child: BenchChild<unknown> | null,
  work: Promise<T>,
): Promise<{ result: T; peakRss: number; cpuMicros: number | null; loopActiveMs: number | null }> {
  let peakRss = 0;
  let done = false;
  const first = child ? await child.memory() : null;
  const sampling = (async () => {
    while (!done && child) {
      const report = await child.memory();
      if (report && report.rss > peakRss) {
        peakRss = report.rss;
        if (report.rss > (peakMemory.get(child.name)?.rss ?? 0)) peakMemory.set(child.name, report);
      }
      await new Promise((resolve) => setTimeout(resolve, MEMORY_SAMPLE_MS));
    }
  })();
  try {
    const result = await work;
    const last = child ? await child.memory() : null;
    const cpu = (report: MemoryReport) => report.cpuUserMicros + report.cpuSystemMicros;
    return {
      result,
      peakRss,
      cpuMicros: first && last ? cpu(last) - cpu(first) : null,
      loopActiveMs: first && last ? last.loopActiveMs - first.loopActiveMs : null,
    };
  } finally {
    done = true;
    await sampling;
  }
}

function checkRun(label: string, result: LoadResult, problems: string[]): void {
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    const statuses = Object.entries(result.refusedByStatus).map(([status, count]) => `${count} × ${status}`);
    const problem = `${label}: ${result.non2xx} non-2xx${statuses.length > 0 ? ` (${statuses.join(', ')})` : ''}, ${result.errors} errors, ${result.timeouts} timeouts`;
    problems.push(problem);
    log(`!!! ${problem}`);
  }
}

async function platformCalls(gatewayUrl: string): Promise<number> {
  return sumOfSamples(await metricsText(gatewayUrl), 'gateway_platform_request_duration_seconds_count');
}

/** The gateways, in the order the bench starts them (the rows it skips are not there). */
function gatewaysOf(setup: BenchSetup): Array<BenchChild<GatewayReady>> {
  return [
    setup.gateway,
    setup.gatewayWarnLogs,
    setup.gatewayTraced,
    setup.gatewayUntraced,
    setup.gatewayCold,
    ...(setup.gatewayRedis ? [setup.gatewayRedis] : []),
    ...(setup.gatewayTsx ? [setup.gatewayTsx] : []),
  ];
}

/** The requests a gateway answered, by its own duration histogram (the scrapes themselves included). */
async function requestsAnswered(gatewayUrl: string): Promise<number> {
  return sumOfSamples(await metricsText(gatewayUrl), 'http_server_request_duration_seconds_count');
}

async function keyServiceCalls(gatewayUrl: string): Promise<{ verify: number; all: number }> {
  const text = await metricsText(gatewayUrl);
  const name = 'gateway_key_service_request_duration_seconds_count';
  return { verify: sumOfSamples(text, name, { operation: 'verify' }), all: sumOfSamples(text, name) };
}

/** 100 identical requests for a key not yet cached; how many platform calls they caused. */
async function collapseTrials(
  setup: BenchSetup,
  problems: string[],
): Promise<{ trials: number; maxPlatformCalls: number; single: number; peakRss: number }> {
  const url = setup.gateway.ready.url;
  const before = await platformCalls(url);
  const alone = await get(`${url}/v1/api/keywords?site=acme.com&limit=6`, setup.authHeaders);
  if (alone.status !== 200) problems.push(`single cold request answered ${alone.status}`);
  const single = (await platformCalls(url)) - before;
  let maxPlatformCalls = 0;
  let peakRss = 0;
  for (let trial = 1; trial <= COLLAPSE_TRIALS; trial++) {
    const path = `/v1/api/keywords?site=acme.com&limit=${6 + trial}`;
    const start = await platformCalls(url);
    const { result: outcome, peakRss: rss } = await measured(
      setup.gateway,
      concurrentIdentical(url, path, setup.authHeaders, COLLAPSE_CONCURRENCY),
    );
    peakRss = Math.max(peakRss, rss);
    const calls = (await platformCalls(url)) - start;
    maxPlatformCalls = Math.max(maxPlatformCalls, calls);
    const ok = outcome.statuses.get(200) ?? 0;
    if (ok !== COLLAPSE_CONCURRENCY || outcome.distinctBodies !== 1) {
      problems.push(
        `collapse trial ${trial}: ${ok}/${COLLAPSE_CONCURRENCY} answered 200, ${outcome.distinctBodies} distinct bodies`,
      );
    }
    log(
      `  collapse trial ${trial}/${COLLAPSE_TRIALS}: ${COLLAPSE_CONCURRENCY} identical cold requests → ${calls} platform call(s), ${outcome.collapsed} marked "collapsed"`,
    );
  }
  return { trials: COLLAPSE_TRIALS, maxPlatformCalls, single, peakRss };
}

/** Whether the main gateway's key event stream stayed up: its log says when it opens and drops. */
async function eventStreamStayedUp(logFile: string): Promise<boolean> {
  let opened = false;
  let dropped = false;
  const lines = createInterface({ input: createReadStream(logFile), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.includes('"msg":"request"')) continue;
    if (line.includes('following key events')) opened = true;
    if (line.includes('key event stream down')) dropped = true;
  }
  return opened && !dropped;
}

/** The main thread's profile of process `pid` (tsx's loader thread writes one too: thread id ≠ 0). */
function mainThreadProfile(dir: string, pid: number): string | null {
  try {
    const files = readdirSync(dir)
      .filter((name) => name.endsWith('.cpuprofile') && name.includes(`.${pid}.0.`))
      .map((name) => join(dir, name))
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    return files[0] ?? null;
  } catch (_err: unknown) {
    return null;
  }
}

async function main(): Promise<void> {
  if (args.only === 'flood') {
    // Its own scenario (issue 12): a flood of made-up keys beside paying callers.
    const { runFloodScenario } = await import('./floodScenario.js');
    await runFloodScenario();
    return;
  }
  if (args.only === 'memory') {
    // Its own scenario (issue 12): RSS through a key cycling spellings and parameters, and idle connections.
    const { runMemoryScenario } = await import('./memoryScenario.js');
    await runMemoryScenario();
    return;
  }
  const startedAt = Date.now();
  const machine = {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round(totalmem() / 1e9),
    node: process.version,
    loadAverageAtStart: loadavg().map((value) => Math.round(value * 100) / 100),
  };
  log(
    `gateway bench: ${ROUNDS} rounds × ${SECONDS} s per target, ${CONNECTIONS} connections for warm runs, ${COLD_CONNECTIONS} for cold runs`,
  );
  log(
    `machine: ${machine.cpus} × ${machine.cpuModel}, node ${machine.node}, load average ${machine.loadAverageAtStart.join(' ')}`,
  );
  log(
    `every gateway keeps its limiter on with RATE_LIMIT_REQUESTS=${BENCH_RATE_LIMIT.requests} per ${BENCH_RATE_LIMIT.windowSeconds} s, ` +
      'so it is measured but never refuses (a 429 would spoil the run and is reported)',
  );
  log('gateways log at LOG_LEVEL=info (the default: one line per request, to a file), plus one at warn for comparison');

  const workDir = mkdtempSync(join(tmpdir(), 'gateway-bench-'));
  const profileDir = join(RESULTS_DIR, 'profiles');
  // --node-flags: extra node options for the gateways, for experiments (e.g. --max-semi-space-size=8).
  const extraFlags = (args['node-flags'] ?? '').split(/\s+/).filter((flag) => flag !== '');
  const profileFlags = [...(args.profile ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []), ...extraFlags];
  if (extraFlags.length > 0) log(`!!! extra node flags for the gateways and bare servers: ${extraFlags.join(' ')}`);
  const problems: string[] = [];
  let setup: BenchSetup | null = null;
  const onSignal = () => {
    void (setup?.close() ?? Promise.resolve()).finally(() => {
      rmSync(workDir, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    setup = await startBench({
      workDir,
      profileFlags,
      withoutRedis: args['no-redis'],
      withoutTsx: args['no-tsx'],
      repo: REPO,
      log,
    });
    const idleRss: Record<string, number> = {};
    for (const child of [
      setup.gateway,
      setup.gatewayWarnLogs,
      setup.gatewayTraced,
      setup.gatewayUntraced,
      setup.gatewayCold,
      setup.gatewayRedis,
      setup.gatewayTsx,
    ]) {
      const report = child ? await child.memory() : null;
      if (child && report) idleRss[child.name] = report.rss;
    }
    const targets = targetsOf(setup);
    // Labels padded to the longest, so the figures line up in columns.
    const labelWidth = Math.max(...targets.map((target) => target.label.length));
    const peakRss = new Map<TargetId, number>();
    const records: RunRecord[] = [];

    log('\n100 identical concurrent cold requests (cache on, a key nobody asked for yet):');
    const collapse = await collapseTrials(setup, problems);
    peakRss.set('gateway', collapse.peakRss);

    log(`\nwarming up, ${WARMUP.sliceSeconds} s at a time, until each target's CPU per request is steady…`);
    for (const target of targets) {
      const slices: WarmupSlice[] = [];
      for (let slice = 1; slice <= WARMUP.maxSlices && !steady(slices); slice++) {
        const { result, cpuMicros } = await measured(target.child, target.run(WARMUP.sliceSeconds));
        checkRun(`warm-up ${target.label}`, result, problems);
        if (cpuMicros === null || result.requests === 0) break;
        slices.push({ micros: cpuMicros / result.requests, requests: result.requests });
      }
      const trail = slices.map((slice) => slice.micros.toFixed(0)).join(' → ');
      log(
        `  ${target.label.padEnd(labelWidth)} ${trail} µs/req${steady(slices) ? '' : ' (not steady: machine busy?)'}`,
      );
    }

    const keyServiceBefore = await keyServiceCalls(setup.gateway.ready.url);
    let gatewayWarmRequests = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      // Each round starts one target later, so no target always runs first (or last).
      const order = targets.map((_, i) => targets[(i + round - 1) % targets.length] as Target);
      for (const target of order) {
        const settle = await target.run(ROUND_SETTLE_SECONDS);
        checkRun(`round ${round} ${target.label} (settling)`, settle, problems);
        if (target.id === 'gateway') gatewayWarmRequests += settle.requests;
        const { result, peakRss: rss, cpuMicros, loopActiveMs } = await measured(target.child, target.run(SECONDS));
        checkRun(`round ${round} ${target.label}`, result, problems);
        peakRss.set(target.id, Math.max(peakRss.get(target.id) ?? 0, rss));
        if (target.id === 'gateway') gatewayWarmRequests += result.requests;
        const latencies =
          result.latenciesMs.length > 0
            ? { p50Ms: percentile(result.latenciesMs, 50), p99Ms: percentile(result.latenciesMs, 99) }
            : {};
        const cpu =
          cpuMicros === null || loopActiveMs === null || result.requests === 0
            ? {}
            : {
                cpuMicrosPerRequest: cpuMicros / result.requests,
                cpuBusy: cpuMicros / 1e6 / result.seconds,
                loopMicrosPerRequest: (loopActiveMs * 1000) / result.requests,
              };
        records.push({
          round,
          target: target.id,
          requests: result.requests,
          requestsPerSecond: result.requestsPerSecond,
          refused: result.non2xx,
          ...latencies,
          ...cpu,
        });
        log(`[round ${round}/${ROUNDS}] ${target.label.padEnd(labelWidth)} ${runFigures(result, latencies, cpu)}`);
      }
    }
    // Let the last usage batch go out (it waits at most a second for companions).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const keyServiceAfter = await keyServiceCalls(setup.gateway.ready.url);
    // Read before anything stops: stopping the upstreams drops the stream on purpose.
    const streamUp = await eventStreamStayedUp(setup.gatewayLog);
    // Every request each gateway answered in its life, to turn its profile into CPU per request.
    const answered = new Map<string, number>();
    if (args.profile) {
      for (const child of gatewaysOf(setup)) answered.set(child.name, await requestsAnswered(child.ready.url));
    }
    await setup.close();

    const of = (id: TargetId) => records.filter((record) => record.target === id);
    const medianOf = (id: TargetId, pick: (record: RunRecord) => number | undefined) =>
      median(
        of(id)
          .map(pick)
          .filter((value): value is number => value !== undefined),
      );
    const perRound = (a: TargetId, b: TargetId, combine: (x: RunRecord, y: RunRecord) => number | undefined) =>
      median(
        of(a)
          .map((x) => {
            const y = of(b).find((record) => record.round === x.round);
            return y ? combine(x, y) : undefined;
          })
          .filter((value): value is number => value !== undefined && Number.isFinite(value)),
      );
    /** The median over the rounds of `combine` applied to each round's records of `ids` (rounds missing one skipped). */
    const perRoundOf = (ids: readonly TargetId[], combine: (records: RunRecord[]) => number) =>
      median(
        of(ids[0] as TargetId)
          .map((first) => {
            const records = ids.map((id) => of(id).find((record) => record.round === first.round));
            return records.every((record) => record !== undefined) ? combine(records as RunRecord[]) : NaN;
          })
          .filter((value) => Number.isFinite(value)),
      );
    const rps = (record: RunRecord) => record.requestsPerSecond;
    const ratio = (x: RunRecord, y: RunRecord) => x.requestsPerSecond / y.requestsPerSecond;
    const cpuDifference = (x: RunRecord, y: RunRecord) =>
      x.cpuMicrosPerRequest === undefined || y.cpuMicrosPerRequest === undefined
        ? undefined
        : x.cpuMicrosPerRequest - y.cpuMicrosPerRequest;
    const optionalMedian = (value: number) => (Number.isNaN(value) ? null : value);
    const complete = [
      'node',
      'koa',
      'gateway',
      'gateway-warn',
      'cold-gateway',
      'cold-proxy',
      'cold-stack',
      'cold-platform',
      'cold-gateway-many',
      'cold-proxy-many',
      'cold-sofa-many',
    ].every((id) => of(id as TargetId).length > 0);

    log('\nmedians over the rounds:');
    for (const target of targets) {
      const optional = (value: number) => (Number.isNaN(value) ? undefined : value);
      const refused = of(target.id).reduce((sum, record) => sum + record.refused, 0);
      const figuresText = runFigures(
        { requestsPerSecond: medianOf(target.id, rps), refusedByStatus: refused > 0 ? { 'non-2xx': refused } : {} },
        { p50Ms: optional(medianOf(target.id, (r) => r.p50Ms)), p99Ms: optional(medianOf(target.id, (r) => r.p99Ms)) },
        {
          cpuMicrosPerRequest: optional(medianOf(target.id, (r) => r.cpuMicrosPerRequest)),
          cpuBusy: optional(medianOf(target.id, (r) => r.cpuBusy)),
          loopMicrosPerRequest: optional(medianOf(target.id, (r) => r.loopMicrosPerRequest)),
        },
      );
      const peak = target.child ? peakMemory.get(target.child.name) : undefined;
      const mb = (bytes: number) => (bytes / 1e6).toFixed(0);
      const rssText = peak ? `  peak RSS ${mb(peak.rss)} MB (heap ${mb(peak.heapUsed)}/${mb(peak.heapTotal)} MB)` : '';
      log(`  ${target.label.padEnd(labelWidth)} ${figuresText}${rssText}`);
    }

    // Per-round CPU differences, printed whatever --only ran: what the gateway adds over bare Koa
    // (its own work per cache hit), and what the tracing hooks cost with tracing off.
    const extraCpu = (a: TargetId, b: TargetId) =>
      of(a).length > 0 && of(b).length > 0 ? optionalMedian(perRound(a, b, cpuDifference)) : null;
    const overKoaCpuMicros = extraCpu('gateway', 'koa');
    const tracingHooksCpuMicros = extraCpu('gateway', 'gateway-untraced');
    if (overKoaCpuMicros !== null)
      log(
        `  gateway − bare Koa: ${overKoaCpuMicros.toFixed(1)} µs of server CPU per request (median of per-round differences)`,
      );
    if (tracingHooksCpuMicros !== null)
      log(
        `  gateway − gateway with tracing compiled out: ${tracingHooksCpuMicros.toFixed(1)} µs of server CPU per request (median of per-round differences)`,
      );
    // The cold rows side by side: what each adds to the direct platform call, and what the
    // gateway adds to the stack proxy (its own work per miss, past the floor of its stack).
    const signed = (value: number, digits: number) => `${value >= 0 ? '+' : ''}${value.toFixed(digits)}`;
    const p50Difference = (x: RunRecord, y: RunRecord) => (x.p50Ms ?? NaN) - (y.p50Ms ?? NaN);
    const cpuRatio = (x: RunRecord, y: RunRecord) => (x.cpuMicrosPerRequest ?? NaN) / (y.cpuMicrosPerRequest ?? NaN);
    const coldPairs: Array<[TargetId, TargetId, string]> = [
      ['cold-gateway', 'cold-platform', 'gateway − direct platform call'],
      ['cold-proxy', 'cold-platform', 'bare proxy − direct platform call'],
      ['cold-stack', 'cold-platform', 'stack proxy − direct platform call'],
      ['cold-gateway', 'cold-stack', 'gateway − stack proxy'],
    ];
    for (const [a, b, name] of coldPairs) {
      if (of(a).length === 0 || of(b).length === 0) continue;
      const addedP50 = perRound(a, b, p50Difference);
      const addedCpu = perRound(a, b, cpuDifference);
      const cpuTimes = perRound(a, b, cpuRatio);
      log(
        `  cold, ${name}: p50 ${signed(addedP50, 3)} ms, server CPU ${signed(addedCpu, 0)} µs per request (${cpuTimes.toFixed(2)} ×) (medians of per-round figures)`,
      );
    }

    const coldFloor = (id: TargetId): ColdFloor => ({
      p50: medianOf(id, (r) => r.p50Ms),
      cpuMicros: medianOf(id, (r) => r.cpuMicrosPerRequest),
      addedP50: perRound(id, 'cold-platform', p50Difference),
      cpuRatio: perRound(id, 'cold-platform', cpuRatio),
    });

    let figures: BenchFigures | null = null;
    if (complete) {
      const hasRedis = of('gateway-redis').length > 0;
      const hasTsx = of('gateway-tsx').length > 0;
      figures = {
        warmRps: {
          node: medianOf('node', rps),
          koa: medianOf('koa', rps),
          gateway: medianOf('gateway', rps),
          gatewayWarnLogs: medianOf('gateway-warn', rps),
          gatewayRedis: hasRedis ? medianOf('gateway-redis', rps) : null,
          gatewayTsx: hasTsx ? medianOf('gateway-tsx', rps) : null,
        },
        warmRatios: {
          gatewayToKoa: perRound('gateway', 'koa', ratio),
          gatewayToNode: perRound('gateway', 'node', ratio),
          gatewayWarnLogsToKoa: perRound('gateway-warn', 'koa', ratio),
          gatewayRedisToKoa: hasRedis ? perRound('gateway-redis', 'koa', ratio) : null,
          gatewayTsxToKoa: hasTsx ? perRound('gateway-tsx', 'koa', ratio) : null,
        },
        gatewayOverKoaCpuMicros: overKoaCpuMicros,
        tracingHooksCpuMicros,
        redisLimiterExtraCpuMicros: hasRedis
          ? optionalMedian(perRound('gateway-redis', 'gateway', cpuDifference))
          : null,
        calibration: CALIBRATION_WORK_MICROS.filter((micros) => of(`koa-work-${micros}`).length > 0).map((micros) => ({
          workMicros: micros,
          toKoa: perRound(`koa-work-${micros}`, 'koa', ratio),
        })),
        cold: {
          connections: COLD_CONNECTIONS,
          gatewayP50: medianOf('cold-gateway', (r) => r.p50Ms),
          gatewayP99: medianOf('cold-gateway', (r) => r.p99Ms),
          platformP50: medianOf('cold-platform', (r) => r.p50Ms),
          platformP99: medianOf('cold-platform', (r) => r.p99Ms),
          addedP50: perRound('cold-gateway', 'cold-platform', p50Difference),
          addedP99: perRound('cold-gateway', 'cold-platform', (x, y) => (x.p99Ms ?? NaN) - (y.p99Ms ?? NaN)),
          gatewayCpuMicros: medianOf('cold-gateway', (r) => r.cpuMicrosPerRequest),
          platformCpuMicros: medianOf('cold-platform', (r) => r.cpuMicrosPerRequest),
          cpuRatio: perRound('cold-gateway', 'cold-platform', cpuRatio),
          throughputRatio: perRound('cold-gateway', 'cold-platform', ratio),
          gatewayRefused: of('cold-gateway').reduce((sum, record) => sum + record.refused, 0),
          proxy: coldFloor('cold-proxy'),
          stack: coldFloor('cold-stack'),
          gatewayOverStackCpuMicros: perRound('cold-gateway', 'cold-stack', cpuDifference),
          gatewayOverStackP50: perRound('cold-gateway', 'cold-stack', p50Difference),
          gatewayOverProxyP50: perRound('cold-gateway', 'cold-proxy', p50Difference),
          // The floor of a miss with the gateway's per-request work: the bare proxy plus what a hit costs over Koa.
          cpuOverProxyWithWarmWork: perRoundOf(
            ['cold-gateway', 'cold-proxy', 'gateway', 'koa'],
            ([cold, proxy, warm, koa]) =>
              (cold?.cpuMicrosPerRequest ?? NaN) /
              ((proxy?.cpuMicrosPerRequest ?? NaN) +
                (warm?.cpuMicrosPerRequest ?? NaN) -
                (koa?.cpuMicrosPerRequest ?? NaN)),
          ),
        },
        coldBesideSofa: {
          connections: MANY_COLD_CONNECTIONS,
          gatewayRps: medianOf('cold-gateway-many', rps),
          sofaRps: medianOf('cold-sofa-many', rps),
          ratio: perRound('cold-gateway-many', 'cold-sofa-many', ratio),
          gatewayCpuMicros: medianOf('cold-gateway-many', (r) => r.cpuMicrosPerRequest),
          sofaCpuMicros: medianOf('cold-sofa-many', (r) => r.cpuMicrosPerRequest),
          proxyRps: medianOf('cold-proxy-many', rps),
          proxyRatio: perRound('cold-proxy-many', 'cold-sofa-many', ratio),
          proxyCpuMicros: medianOf('cold-proxy-many', (r) => r.cpuMicrosPerRequest),
        },
        collapse: {
          trials: collapse.trials,
          maxPlatformCalls: collapse.maxPlatformCalls,
          platformCallsOfOneRequest: collapse.single,
        },
        keyService: {
          warmRequests: gatewayWarmRequests,
          verifyCalls: keyServiceAfter.verify - keyServiceBefore.verify,
          allCalls: keyServiceAfter.all - keyServiceBefore.all,
          streamUp,
        },
        peakRssMb: (peakRss.get('gateway') ?? 0) / 1e6,
        idleRssMb: (idleRss[setup.gateway.name] ?? 0) / 1e6,
        peakRssRedisMb: hasRedis ? (peakRss.get('gateway-redis') ?? 0) / 1e6 : null,
        peakRssTsxMb: hasTsx ? (peakRss.get('gateway-tsx') ?? 0) / 1e6 : null,
      };
    }

    const rows = figures ? verdicts(figures) : [];
    if (figures) {
      log('\nresults (Markdown, for the README):\n');
      log(markdownTable(rows));
    } else {
      log('\n(--only: some targets were not run, so no target table)');
    }

    const profiles: Record<string, string> = {};
    const workByGateway: Record<string, RequestWork> = {};
    if (args.profile) {
      const profiled: Array<Pick<BenchChild<unknown>, 'name' | 'process'>> = [...gatewaysOf(setup), setup.bare];
      for (const child of profiled) {
        const pid = child.process.pid;
        const file = pid === undefined ? null : mainThreadProfile(profileDir, pid);
        if (!file) {
          log(`\n!!! no CPU profile was written for ${child.name}`);
          continue;
        }
        profiles[child.name] = file;
        const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
        const summary = formatSummary(summarizeProfile(profile, 25));
        log(`\nCPU profile of ${child.name} (whole life, start-up included): ${file}\n${summary}`);
        const requests = answered.get(child.name);
        if (requests !== undefined) {
          const work = workPerRequest(profile, requests);
          workByGateway[child.name] = work;
          log(`\n${child.name}: ${formatRequestWork(work)}`);
        }
      }
    }

    mkdirSync(RESULTS_DIR, { recursive: true });
    const results = {
      finishedAt: new Date().toISOString(),
      durationSeconds: Math.round((Date.now() - startedAt) / 1000),
      settings: {
        rounds: ROUNDS,
        secondsPerRun: SECONDS,
        warmConnections: CONNECTIONS,
        coldConnections: COLD_CONNECTIONS,
        warmPath: WARM_PATH,
        rateLimit: BENCH_RATE_LIMIT,
        logLevel: 'info (plus one gateway at warn)',
        gatewayRuntime: 'esbuild output (npm run build settings) on plain node, as npm start runs it',
        profile: args.profile,
        nodeFlags: extraFlags,
      },
      machine,
      figures,
      verdicts: rows,
      runs: records,
      peakMemory: Object.fromEntries(peakMemory),
      idleRss,
      profiles,
      workPerRequest: workByGateway,
      problems,
    };
    writeFileSync(join(RESULTS_DIR, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    log(`\nwritten: bench-results/latest.json (${results.durationSeconds} s in all)`);
    if (problems.length > 0) {
      log(`\n!!! ${problems.length} problem(s) spoil these figures:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
      process.exitCode = 1;
    }
  } finally {
    await setup?.close();
    rmSync(workDir, { recursive: true, force: true });
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

await main();
