import assert from 'node:assert/strict';
import { markdownTable, verdicts, type BenchFigures } from './report.js';

const figures: BenchFigures = {
  warmRps: { node: 40_000, koa: 30_000, gateway: 24_000, gatewayWarnLogs: 25_000, gatewayRedis: null, gatewayCompiled: 28_000 },
  warmRatios: { gatewayToKoa: 0.8, gatewayToNode: 0.6, gatewayWarnLogsToKoa: 0.83, gatewayRedisToKoa: null, gatewayCompiledToKoa: 0.93 },
  cold: { gatewayP50: 1.5, gatewayP99: 4, platformP50: 0.6, platformP99: 2, addedP50: 0.9, addedP99: 2 },
  collapse: { trials: 5, maxPlatformCalls: 2, platformCallsOfOneRequest: 1 },
  keyService: { warmRequests: 100_000, verifyCalls: 10, allCalls: 110, streamUp: true },
  peakRssMb: 120,
  idleRssMb: 90,
  peakRssRedisMb: null,
  peakRssCompiledMb: 80,
};

describe('bench report', () => {
  it('judges each figure against its target, and skips the Redis row loudly when it was not measured', () => {
    const resultOf = (start: string) => verdicts(figures).find((row) => row.figure.startsWith(start))?.result;
    assert.equal(resultOf('Warm req/s, gateway (local limiter, LOG_LEVEL=info)'), 'PASS');
    assert.equal(resultOf('Cold call added latency p50'), 'PASS');
    assert.equal(resultOf('100 identical concurrent cold requests'), 'MISS');
    assert.equal(resultOf('Key-service calls per warm request'), 'PASS');
    assert.equal(resultOf('Peak memory'), 'PASS');
    const redis = verdicts(figures).find((row) => row.figure.includes('Redis'));
    assert.equal(redis?.result, 'SKIPPED');
    assert.match(redis?.measured ?? '', /redis-server missing/);
  });

  it('fails the key-service figure when the event stream was down, whatever the count', () => {
    const down = verdicts({ ...figures, keyService: { ...figures.keyService, streamUp: false } });
    assert.equal(down.find((row) => row.figure.startsWith('Key-service'))?.result, 'MISS');
  });

  it('prints a Markdown table with one row per figure, pipes escaped', () => {
    const table = markdownTable([{ figure: 'a | b', measured: '1', target: '< 2', result: 'PASS' }]);
    assert.equal(table, '| Figure | Measured | Target | Result |\n| --- | --- | --- | --- |\n| a \\| b | 1 | < 2 | PASS |');
  });
});
