/**
 * The bench's figures, their targets (issue 7), and the Markdown table printed at the
 * end and pasted into the README. Pure: no I/O.
 */

export interface BenchFigures {
  /** Median requests per second over the rounds (cache hits, same URL). */
  readonly warmRps: {
    readonly node: number;
    readonly koa: number;
    readonly gateway: number;
    /** The same gateway with LOG_LEVEL=warn (no per-request log line). */
    readonly gatewayWarnLogs: number;
    /** null: redis-server is not installed, the row is skipped. */
    readonly gatewayRedis: number | null;
    /** The same gateway run from its TypeScript through tsx (how npm start ran before); null when skipped. */
    readonly gatewayTsx: number | null;
  };
  /** Medians of the per-round ratios (each round measures both sides back to back). */
  readonly warmRatios: {
    readonly gatewayToKoa: number;
    readonly gatewayToNode: number;
    readonly gatewayWarnLogsToKoa: number;
    readonly gatewayRedisToKoa: number | null;
    readonly gatewayTsxToKoa: number | null;
  };
  /**
   * Server CPU µs per warm request of the gateway minus bare Koa serving the same bytes
   * (median of per-round differences): the gateway's own work per cache hit.
   */
  readonly gatewayOverKoaCpuMicros: number | null;
  /**
   * Server CPU µs per warm request of the gateway (tracing off) minus the same gateway built
   * with the tracing helpers compiled out; null when that row was not run.
   */
  readonly tracingHooksCpuMicros: number | null;
  /**
   * Server CPU µs per warm request of the Redis-limiter gateway minus the local-limiter
   * one (median of per-round differences); null when the Redis row was skipped.
   */
  readonly redisLimiterExtraCpuMicros: number | null;
  /** Bare Koa doing a fixed amount of busy work per request, as a share of bare Koa (medians of per-round ratios). */
  readonly calibration: ReadonlyArray<{ readonly workMicros: number; readonly toKoa: number }>;
  /** Milliseconds, medians over the rounds. */
  readonly cold: {
    /** Concurrent connections of the cold runs: 1 unless --cold-connections says otherwise. */
    readonly connections: number;
    readonly gatewayP50: number;
    readonly gatewayP99: number;
    readonly platformP50: number;
    readonly platformP99: number;
    /** Medians of the per-round differences gateway − platform. */
    readonly addedP50: number;
    readonly addedP99: number;
    /** CPU µs per answered request: the gateway's per cold request, the platform's per direct call (medians). */
    readonly gatewayCpuMicros: number;
    readonly platformCpuMicros: number;
    /** Medians of the per-round ratios gateway ÷ platform: CPU per request, and goodput (2xx per second). */
    readonly cpuRatio: number;
    readonly throughputRatio: number;
    /** The gateway's cold answers outside 2xx over every round: refusals, never part of the goodput. */
    readonly gatewayRefused: number;
    /**
     * The two floors of a cache miss. The bare proxy (node:http and the same platform call
     * through undici, nothing else) is what any gateway of this shape pays here; the stack
     * proxy (Koa and the same call through the gateway's own transport, nothing else) is what a
     * gateway on this project's stack pays before any work of its own.
     */
    readonly proxy: ColdFloor;
    readonly stack: ColdFloor;
    /** Medians of the per-round differences gateway − stack proxy: the gateway's own cost per miss on its stack. */
    readonly gatewayOverStackCpuMicros: number;
    readonly gatewayOverStackP50: number;
    /** Medians of the per-round differences gateway − bare proxy (p50, ms). */
    readonly gatewayOverProxyP50: number;
    /** Medians of the per-round ratios cold gateway CPU ÷ (bare proxy CPU + warm gateway CPU − bare Koa CPU). */
    readonly cpuOverProxyWithWarmWork: number;
  };
  /** Cold goodput with calls overlapping: the no-cache gateway beside SOFA over the same schema (medians; ratio per round). */
  readonly coldBesideSofa: {
    readonly connections: number;
    readonly gatewayRps: number;
    readonly sofaRps: number;
    readonly ratio: number;
    readonly gatewayCpuMicros: number;
    readonly sofaCpuMicros: number;
    /** The bare proxy with as many connections: the floor of the gateway's goodput on this machine. */
    readonly proxyRps: number;
    readonly proxyRatio: number;
    readonly proxyCpuMicros: number;
  };
  /** 100 identical concurrent cold requests: platform calls they caused (the most over the trials). */
  readonly collapse: {
    readonly trials: number;
    readonly maxPlatformCalls: number;
    readonly platformCallsOfOneRequest: number;
  };
  /** Over the warm gateway runs (local limiter), while the key event stream was up. */
  readonly keyService: {
    readonly warmRequests: number;
    readonly verifyCalls: number;
    readonly allCalls: number;
    readonly streamUp: boolean;
  };
  /** Peak RSS of the gateway process (local limiter; esbuild's output on plain node, as npm start runs it) under load, MB (10^6 bytes). */
  readonly peakRssMb: number;
  /** Its RSS once started, before any load. */
  readonly idleRssMb: number;
  readonly peakRssRedisMb: number | null;
  /** Peak RSS of the same gateway run through tsx (for context: how npm start ran before). */
  readonly peakRssTsxMb: number | null;
}

/** A cold floor: its p50 and CPU µs per request (medians), and the per-round medians of floor − platform (p50) and floor ÷ platform (CPU). */
export interface ColdFloor {
  readonly p50: number;
  readonly cpuMicros: number;
  readonly addedP50: number;
  readonly cpuRatio: number;
}

export interface Verdict {
  readonly figure: string;
  readonly measured: string;
  readonly target: string;
  /** PASS / MISS, or '' for figures shown for context only, 'SKIPPED' when not measured. */
  readonly result: 'PASS' | 'MISS' | 'SKIPPED' | '';
}

const passOrMiss = (ok: boolean): 'PASS' | 'MISS' => (ok ? 'PASS' : 'MISS');

/** A row given for context: a figure with no target of its own. */
const context = (figure: string, measured: string): Verdict => ({ figure, measured, target: '', result: '' });

/** A figure measured from two sides, written with both: "0.64 ms (0.94 ms vs 0.29 ms)". */
const versus = (figure: string, one: string, other: string): string => `${figure} (${one} vs ${other})`;

/** "1 connection", "4 connections". */
export function connectionsLabel(count: number): string {
  return `${count} connection${count === 1 ? '' : 's'}`;
}

export function verdicts(f: BenchFigures): Verdict[] {
  const rows: Verdict[] = [
    { figure: 'Warm req/s, bare node:http (same bytes)', measured: rps(f.warmRps.node), target: '', result: '' },
    { figure: 'Warm req/s, bare Koa (same bytes)', measured: rps(f.warmRps.koa), target: '', result: '' },
    ...f.calibration.map(({ workMicros, toKoa }) => ({
      figure: `Calibration: bare Koa + ${workMicros} µs of busy work per request`,
      measured: `${ratio(toKoa)} of Koa`,
      target: '',
      result: '' as const,
    })),
    {
      figure: 'Warm req/s, gateway (local limiter, LOG_LEVEL=info)',
      measured: `${rps(f.warmRps.gateway)} = ${ratio(f.warmRatios.gatewayToKoa)} of Koa, ${ratio(f.warmRatios.gatewayToNode)} of node:http`,
      target: '≥ 0.75 of Koa',
      result: passOrMiss(f.warmRatios.gatewayToKoa >= 0.75),
    },
    f.gatewayOverKoaCpuMicros === null
      ? {
          figure: 'Gateway server CPU per warm request over bare Koa',
          measured: 'not measured',
          target: '≤ 25 µs',
          result: 'SKIPPED',
        }
      : {
          figure: 'Gateway server CPU per warm request over bare Koa',
          measured: `${f.gatewayOverKoaCpuMicros.toFixed(0)} µs`,
          target: '≤ 25 µs',
          result: passOrMiss(f.gatewayOverKoaCpuMicros <= 25),
        },
    f.gatewayOverKoaCpuMicros === null
      ? {
          figure: 'Warm: gateway server CPU per cache hit over bare Koa, one log line per request (issue 38)',
          measured: 'not measured',
          target: '≤ 60 µs',
          result: 'SKIPPED',
        }
      : {
          figure: 'Warm: gateway server CPU per cache hit over bare Koa, one log line per request (issue 38)',
          measured: `${f.gatewayOverKoaCpuMicros.toFixed(0)} µs`,
          target: '≤ 60 µs',
          result: passOrMiss(f.gatewayOverKoaCpuMicros <= 60),
        },
    {
      figure: 'Tracing off: server CPU per warm request over a build with tracing compiled out',
      measured: f.tracingHooksCpuMicros === null ? 'not measured' : `${f.tracingHooksCpuMicros.toFixed(1)} µs`,
      target: '',
      result: f.tracingHooksCpuMicros === null ? 'SKIPPED' : '',
    },
    context(
      'Warm req/s, gateway (local limiter, LOG_LEVEL=warn)',
      `${rps(f.warmRps.gatewayWarnLogs)} = ${ratio(f.warmRatios.gatewayWarnLogsToKoa)} of Koa`,
    ),
    f.warmRps.gatewayRedis === null || f.warmRatios.gatewayRedisToKoa === null
      ? {
          figure: 'Warm req/s, gateway (Redis limiter)',
          measured: 'not measured: redis-server missing',
          target: '≥ 0.5 of Koa',
          result: 'SKIPPED',
        }
      : {
          figure: 'Warm req/s, gateway (Redis limiter, LOG_LEVEL=info)',
          measured: `${rps(f.warmRps.gatewayRedis)} = ${ratio(f.warmRatios.gatewayRedisToKoa)} of Koa`,
          target: '≥ 0.5 of Koa',
          result: passOrMiss(f.warmRatios.gatewayRedisToKoa >= 0.5),
        },
    f.redisLimiterExtraCpuMicros === null
      ? {
          figure: 'Redis limiter: server CPU per warm request over the local limiter',
          measured: 'not measured',
          target: '≤ 10 µs',
          result: 'SKIPPED',
        }
      : {
          figure: 'Redis limiter: server CPU per warm request over the local limiter',
          measured: `${f.redisLimiterExtraCpuMicros.toFixed(0)} µs`,
          target: '≤ 10 µs',
          result: passOrMiss(f.redisLimiterExtraCpuMicros <= 10),
        },
    ...(f.warmRps.gatewayTsx === null || f.warmRatios.gatewayTsxToKoa === null
      ? []
      : [
          {
            figure: 'Warm req/s, gateway through tsx, how npm start ran before (local limiter, LOG_LEVEL=info)',
            measured: `${rps(f.warmRps.gatewayTsx)} = ${ratio(f.warmRatios.gatewayTsxToKoa)} of Koa`,
            target: '',
            result: '' as const,
          },
        ]),
    {
      figure: 'Cold call added latency p50 (gateway − direct platform call)',
      measured: versus(ms(f.cold.addedP50), ms(f.cold.gatewayP50), ms(f.cold.platformP50)),
      target: '< 0.5 ms',
      result: passOrMiss(f.cold.addedP50 < 0.5),
    },
    context(
      'Cold floor: bare proxy added p50 (bare proxy − direct platform call)',
      versus(ms(f.cold.proxy.addedP50), ms(f.cold.proxy.p50), ms(f.cold.platformP50)),
    ),
    context(
      'Cold floor on this stack: stack proxy added p50 (stack proxy − direct platform call)',
      versus(ms(f.cold.stack.addedP50), ms(f.cold.stack.p50), ms(f.cold.platformP50)),
    ),
    context(
      "Cold: gateway's own p50 per miss over the stack proxy",
      versus(ms(f.cold.gatewayOverStackP50), ms(f.cold.gatewayP50), ms(f.cold.stack.p50)),
    ),
    {
      figure: "Cold call added latency p50 over the bare proxy's (gateway − bare proxy, issue 38)",
      measured: versus(ms(f.cold.gatewayOverProxyP50), ms(f.cold.gatewayP50), ms(f.cold.proxy.p50)),
      target: '≤ 0.3 ms',
      result: passOrMiss(f.cold.gatewayOverProxyP50 <= 0.3),
    },
    context('Cold call added latency p99', versus(ms(f.cold.addedP99), ms(f.cold.gatewayP99), ms(f.cold.platformP99))),
    {
      figure: 'Cold call CPU: gateway per cache miss ÷ platform per direct call',
      measured: versus(ratio(f.cold.cpuRatio), micros(f.cold.gatewayCpuMicros), micros(f.cold.platformCpuMicros)),
      target: '≤ 1.5',
      result: passOrMiss(f.cold.cpuRatio <= 1.5),
    },
    context(
      'Cold floor: bare proxy CPU ÷ platform',
      versus(ratio(f.cold.proxy.cpuRatio), micros(f.cold.proxy.cpuMicros), micros(f.cold.platformCpuMicros)),
    ),
    context(
      'Cold floor on this stack: stack proxy CPU ÷ platform',
      versus(ratio(f.cold.stack.cpuRatio), micros(f.cold.stack.cpuMicros), micros(f.cold.platformCpuMicros)),
    ),
    ...stackWithWarmWork(f),
    ...proxyWithWarmWork(f),
    context(
      "Cold: gateway's own CPU per miss over the stack proxy",
      versus(micros(f.cold.gatewayOverStackCpuMicros), micros(f.cold.gatewayCpuMicros), micros(f.cold.stack.cpuMicros)),
    ),
    context(
      `Cold goodput (2xx/s), ${connectionsLabel(f.cold.connections)}: gateway ÷ direct platform call`,
      `${ratio(f.cold.throughputRatio)}; gateway refusals ${f.cold.gatewayRefused}`,
    ),
    {
      figure: `Cold goodput (2xx/s), ${connectionsLabel(f.coldBesideSofa.connections)}: gateway ÷ SOFA over the same schema (issue 38)`,
      measured: `${ratio(f.coldBesideSofa.ratio)} (${rps(f.coldBesideSofa.gatewayRps)} vs ${rps(f.coldBesideSofa.sofaRps)}; CPU per request ${micros(f.coldBesideSofa.gatewayCpuMicros)} vs ${micros(f.coldBesideSofa.sofaCpuMicros)})`,
      target: '≥ 5',
      result: passOrMiss(f.coldBesideSofa.ratio >= 5),
    },
    context(
      `Cold goodput floor (2xx/s), ${connectionsLabel(f.coldBesideSofa.connections)}: bare proxy ÷ SOFA`,
      `${ratio(f.coldBesideSofa.proxyRatio)} (${rps(f.coldBesideSofa.proxyRps)} vs ${rps(f.coldBesideSofa.sofaRps)}; CPU per request ${micros(f.coldBesideSofa.proxyCpuMicros)} vs ${micros(f.coldBesideSofa.sofaCpuMicros)})`,
    ),
    {
      figure: '100 identical concurrent cold requests → platform calls',
      measured: `${f.collapse.maxPlatformCalls} (most over ${f.collapse.trials} trials; one request alone makes ${f.collapse.platformCallsOfOneRequest})`,
      target: '1',
      result: passOrMiss(f.collapse.maxPlatformCalls === 1),
    },
    {
      figure: 'Key-service calls per warm request (event stream up)',
      measured: `${perRequest(f.keyService.allCalls, f.keyService.warmRequests)} (${f.keyService.verifyCalls} verify + ${f.keyService.allCalls - f.keyService.verifyCalls} usage over ${f.keyService.warmRequests.toLocaleString('en-US')} requests${f.keyService.streamUp ? '' : '; STREAM WAS DOWN'})`,
      target: '< 0.01',
      result: passOrMiss(f.keyService.streamUp && f.keyService.allCalls / f.keyService.warmRequests < 0.01),
    },
    {
      figure: 'Peak memory (RSS) of the gateway under load (as npm start runs it: esbuild output on plain node)',
      measured:
        `${mb(f.peakRssMb)} (${mb(f.idleRssMb)} once started)` +
        (f.peakRssRedisMb === null ? '' : `; Redis limiter: ${mb(f.peakRssRedisMb)}`) +
        (f.peakRssTsxMb === null ? '' : `; through tsx: ${mb(f.peakRssTsxMb)}`),
      target: '< 150 MB',
      result: passOrMiss(f.peakRssMb < 150 && (f.peakRssRedisMb ?? 0) < 150),
    },
  ];
  return rows;
}

/**
 * A lower bound of the gateway's CPU per miss on its stack: the stack proxy plus what the
 * gateway does per cache hit past bare Koa (authentication, the limit, headers, usage,
 * metrics, the log line), which a miss does too. The warm figure is measured with calls
 * overlapping, where every step costs least, so the bound errs low. (Medians of the
 * separate rows, not per round.)
 */
function stackWithWarmWork(f: BenchFigures): Verdict[] {
  if (f.gatewayOverKoaCpuMicros === null) return [];
  const bound = f.cold.stack.cpuMicros + f.gatewayOverKoaCpuMicros;
  return [
    context(
      "Cold floor on this stack with the gateway's per-request work: (stack proxy + warm gateway over Koa) ÷ platform",
      versus(ratio(bound / f.cold.platformCpuMicros), micros(bound), micros(f.cold.platformCpuMicros)),
    ),
  ];
}

/**
 * Issue 38's floor of a miss: the bare proxy (two HTTP exchanges, nothing else) plus what the gateway
 * does per cache hit past bare Koa, which a miss does too. The ratio is the median of per-round ratios;
 * the figures beside it are medians of the rows.
 */
function proxyWithWarmWork(f: BenchFigures): Verdict[] {
  if (f.gatewayOverKoaCpuMicros === null) return [];
  const floor = f.cold.proxy.cpuMicros + f.gatewayOverKoaCpuMicros;
  return [
    {
      figure: 'Cold CPU per miss ÷ (bare proxy CPU + warm gateway over Koa) (issue 38)',
      measured: versus(ratio(f.cold.cpuOverProxyWithWarmWork), micros(f.cold.gatewayCpuMicros), micros(floor)),
      target: '≤ 1.3',
      result: passOrMiss(f.cold.cpuOverProxyWithWarmWork <= 1.3),
    },
  ];
}

export function markdownTable(rows: readonly Verdict[]): string {
  const escapeCell = (text: string) => text.replace(/\|/g, '\\|');
  const lines = ['| Figure | Measured | Target | Result |', '| --- | --- | --- | --- |'];
  for (const row of rows)
    lines.push(
      `| ${escapeCell(row.figure)} | ${escapeCell(row.measured)} | ${escapeCell(row.target)} | ${row.result} |`,
    );
  return lines.join('\n');
}

function rps(value: number): string {
  return `${Math.round(value).toLocaleString('en-US')} req/s`;
}

function mb(value: number): string {
  return `${value.toFixed(0)} MB`;
}

function ratio(value: number): string {
  return value.toFixed(2);
}

function ms(value: number): string {
  return `${value.toFixed(2)} ms`;
}

function micros(value: number): string {
  return `${value.toFixed(0)} µs`;
}

function perRequest(calls: number, requests: number): string {
  return requests > 0 ? (calls / requests).toFixed(5) : 'n/a';
}
