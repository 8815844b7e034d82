import assert from 'node:assert/strict';
import { type BenchFigures, markdownTable, verdicts } from './report.js';

const figures: BenchFigures = {
  warmRps: {
    node: 40_000,
    koa: 30_000,
    gateway: 24_000,
    gatewayWarnLogs: 25_000,
    gatewayRedis: null,
    gatewayTsx: 21_000,
  },
  warmRatios: {
    gatewayToKoa: 0.8,
    gatewayToNode: 0.6,
    gatewayWarnLogsToKoa: 0.83,
    gatewayRedisToKoa: null,
    gatewayTsxToKoa: 0.7,
  },
  gatewayOverKoaCpuMicros: 30,
  tracingHooksCpuMicros: 0.4,
  redisLimiterExtraCpuMicros: null,
  calibration: [
    { workMicros: 10, toKoa: 0.62 },
    { workMicros: 40, toKoa: 0.31 },
  ],
  cold: {
    connections: 1,
    gatewayP50: 1.0,
    gatewayP99: 4,
    platformP50: 0.6,
    platformP99: 2,
    addedP50: 0.4,
    addedP99: 2,
    gatewayCpuMicros: 500,
    platformCpuMicros: 300,
    cpuRatio: 1.67,
    throughputRatio: 0.6,
    gatewayRefused: 0,
    proxy: { p50: 0.7, cpuMicros: 240, addedP50: 0.1, cpuRatio: 0.8 },
    stack: { p50: 0.8, cpuMicros: 420, addedP50: 0.2, cpuRatio: 1.4 },
    gatewayOverStackCpuMicros: 80,
    gatewayOverStackP50: 0.25,
    gatewayOverProxyP50: 0.3,
    cpuOverProxyWithWarmWork: 1.85,
  },
  coldBesideSofa: {
    connections: 50,
    gatewayRps: 1_500,
    sofaRps: 250,
    ratio: 6,
    gatewayCpuMicros: 600,
    sofaCpuMicros: 3_900,
    proxyRps: 2_000,
    proxyRatio: 8,
    proxyCpuMicros: 300,
  },
  collapse: { trials: 5, maxPlatformCalls: 2, platformCallsOfOneRequest: 1 },
  keyService: { warmRequests: 100_000, verifyCalls: 10, allCalls: 110, streamUp: true },
  peakRssMb: 120,
  idleRssMb: 90,
  peakRssRedisMb: null,
  peakRssTsxMb: 160,
};

describe('bench report', () => {
  it('judges each figure against its target, and skips the Redis row loudly when it was not measured', () => {
    const resultOf = (start: string) => verdicts(figures).find((row) => row.figure.startsWith(start))?.result;
    assert.equal(resultOf('Warm req/s, gateway (local limiter, LOG_LEVEL=info)'), 'PASS');
    assert.equal(resultOf('Cold call added latency p50'), 'PASS');
    assert.equal(resultOf('Cold call CPU'), 'MISS');
    assert.equal(resultOf('100 identical concurrent cold requests'), 'MISS');
    assert.equal(resultOf('Key-service calls per warm request'), 'PASS');
    assert.equal(resultOf('Peak memory'), 'PASS');
    assert.equal(resultOf('Warm: gateway server CPU per cache hit over bare Koa'), 'PASS');
    const slow = verdicts({ ...figures, gatewayOverKoaCpuMicros: 61 });
    assert.equal(slow.find((row) => row.figure.startsWith('Warm: gateway server CPU'))?.result, 'MISS');
    const redis = verdicts(figures).find((row) => row.figure.includes('Redis'));
    assert.equal(redis?.result, 'SKIPPED');
    assert.match(redis?.measured ?? '', /redis-server missing/);
  });

  it('shows the calibration rows for context, without a target', () => {
    const rows = verdicts(figures).filter((row) => row.figure.startsWith('Calibration'));
    assert.deepEqual(
      rows.map((row) => [row.figure, row.measured, row.result]),
      [
        ['Calibration: bare Koa + 10 µs of busy work per request', '0.62 of Koa', ''],
        ['Calibration: bare Koa + 40 µs of busy work per request', '0.31 of Koa', ''],
      ],
    );
  });

  it('shows the two cold floors for context: each beside the cold target it measures the floor of', () => {
    const rows = verdicts(figures).filter((row) => row.figure.startsWith('Cold'));
    assert.deepEqual(
      rows.map((row) => [row.figure, row.measured, row.target, row.result]),
      [
        [
          'Cold call added latency p50 (gateway − direct platform call)',
          '0.40 ms (1.00 ms vs 0.60 ms)',
          '< 0.5 ms',
          'PASS',
        ],
        [
          'Cold floor: bare proxy added p50 (bare proxy − direct platform call)',
          '0.10 ms (0.70 ms vs 0.60 ms)',
          '',
          '',
        ],
        [
          'Cold floor on this stack: stack proxy added p50 (stack proxy − direct platform call)',
          '0.20 ms (0.80 ms vs 0.60 ms)',
          '',
          '',
        ],
        ["Cold: gateway's own p50 per miss over the stack proxy", '0.25 ms (1.00 ms vs 0.80 ms)', '', ''],
        [
          "Cold call added latency p50 over the bare proxy's (gateway − bare proxy, issue 38)",
          '0.30 ms (1.00 ms vs 0.70 ms)',
          '≤ 0.3 ms',
          'PASS',
        ],
        ['Cold call added latency p99', '2.00 ms (4.00 ms vs 2.00 ms)', '', ''],
        [
          'Cold call CPU: gateway per cache miss ÷ platform per direct call',
          '1.67 (500 µs vs 300 µs)',
          '≤ 1.5',
          'MISS',
        ],
        ['Cold floor: bare proxy CPU ÷ platform', '0.80 (240 µs vs 300 µs)', '', ''],
        ['Cold floor on this stack: stack proxy CPU ÷ platform', '1.40 (420 µs vs 300 µs)', '', ''],
        [
          "Cold floor on this stack with the gateway's per-request work: (stack proxy + warm gateway over Koa) ÷ platform",
          '1.50 (450 µs vs 300 µs)',
          '',
          '',
        ],
        [
          'Cold CPU per miss ÷ (bare proxy CPU + warm gateway over Koa) (issue 38)',
          '1.85 (500 µs vs 270 µs)',
          '≤ 1.3',
          'MISS',
        ],
        ["Cold: gateway's own CPU per miss over the stack proxy", '80 µs (500 µs vs 420 µs)', '', ''],
        ['Cold goodput (2xx/s), 1 connection: gateway ÷ direct platform call', '0.60; gateway refusals 0', '', ''],
        [
          'Cold goodput (2xx/s), 50 connections: gateway ÷ SOFA over the same schema (issue 38)',
          '6.00 (1,500 req/s vs 250 req/s; CPU per request 600 µs vs 3900 µs)',
          '≥ 5',
          'PASS',
        ],
        [
          'Cold goodput floor (2xx/s), 50 connections: bare proxy ÷ SOFA',
          '8.00 (2,000 req/s vs 250 req/s; CPU per request 300 µs vs 3900 µs)',
          '',
          '',
        ],
      ],
    );
  });

  it("leaves the stack floor with the gateway's per-request work out when the warm rows were not run", () => {
    const rows = verdicts({ ...figures, gatewayOverKoaCpuMicros: null });
    assert.equal(
      rows.some((row) => row.figure.includes("with the gateway's per-request work")),
      false,
    );
    assert.equal(
      rows.some((row) => row.figure.includes('bare proxy CPU + warm gateway')),
      false,
    );
    assert.equal(rows.find((row) => row.figure.startsWith('Warm: gateway server CPU'))?.result, 'SKIPPED');
  });

  it('shows the run through tsx for context only: its own row, and its memory beside the judged figure', () => {
    const rows = verdicts(figures);
    const tsx = rows.find((row) => row.figure.startsWith('Warm req/s, gateway through tsx'));
    assert.deepEqual(tsx && { measured: tsx.measured, result: tsx.result }, {
      measured: '21,000 req/s = 0.70 of Koa',
      result: '',
    });
    const memory = rows.find((row) => row.figure.startsWith('Peak memory'));
    assert.equal(
      memory?.figure,
      'Peak memory (RSS) of the gateway under load (as npm start runs it: esbuild output on plain node)',
    );
    assert.equal(memory?.measured, '120 MB (90 MB once started); through tsx: 160 MB');
    assert.equal(memory?.result, 'PASS');
  });

  it('leaves the run through tsx out when it was skipped (--no-tsx)', () => {
    const rows = verdicts({
      ...figures,
      warmRps: { ...figures.warmRps, gatewayTsx: null },
      warmRatios: { ...figures.warmRatios, gatewayTsxToKoa: null },
      peakRssTsxMb: null,
    });
    assert.equal(
      rows.some((row) => /tsx/.test(`${row.figure} ${row.measured}`)),
      false,
    );
    assert.equal(rows.find((row) => row.figure.startsWith('Peak memory'))?.measured, '120 MB (90 MB once started)');
  });

  it('fails the key-service figure when the event stream was down, whatever the count', () => {
    const down = verdicts({ ...figures, keyService: { ...figures.keyService, streamUp: false } });
    assert.equal(down.find((row) => row.figure.startsWith('Key-service'))?.result, 'MISS');
  });

  it('prints a Markdown table with one row per figure, pipes escaped', () => {
    const table = markdownTable([{ figure: 'a | b', measured: '1', target: '< 2', result: 'PASS' }]);
    assert.equal(
      table,
      '| Figure | Measured | Target | Result |\n| --- | --- | --- | --- |\n| a \\| b | 1 | < 2 | PASS |',
    );
  });
});
