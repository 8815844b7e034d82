import assert from 'node:assert/strict';
import { moduleOf, summarizeProfile, workPerRequest } from './profileSummary.js';
import { median, percentile, steady, sumOfSamples, WARMUP } from './stats.js';

describe('bench numbers', () => {
  it('takes the median of odd and even counts, unsorted', () => {
    assert.equal(median([5, 1, 3]), 3);
    assert.equal(median([4, 1, 3, 2]), 2.5);
    assert.ok(Number.isNaN(median([])));
  });

  it('interpolates percentiles between closest ranks', () => {
    const values = [10, 1, 4, 3, 2, 5, 6, 7, 8, 9];
    assert.equal(percentile(values, 50), 5.5);
    assert.equal(percentile(values, 100), 10);
    assert.ok(Math.abs(percentile(values, 99) - 9.91) < 1e-9);
  });

  it('calls a warm-up steady once enough requests were served and two slices in a row stay within 10 % of the one before', () => {
    const slices = (micros: number[], requests = 10_000) => micros.map((m) => ({ micros: m, requests }));
    assert.equal(steady([]), false);
    assert.equal(steady(slices([500, 500])), false, 'two slices are one comparison');
    assert.equal(steady(slices([2000, 900, 860, 820])), true);
    assert.equal(steady(slices([2000, 900, 860, 700])), false, 'the last fell by a fifth');
    assert.equal(steady(slices([900, 990, 1080])), true, 'each within 10 % of its own predecessor');
    // A cold miss at one connection levels off early, still optimizing: too few calls yet.
    assert.equal(steady(slices([1285, 1220, 1192], 800)), false, 'fewer requests than WARMUP.minRequests');
    assert.equal(steady(slices([1285, 1220, 1192], WARMUP.minRequests / 3)), true);
  });

  it('sums the samples of one metric whose labels include the given ones', () => {
    const exposition = [
      '# HELP gateway_key_service_request_duration_seconds Key service call latency.',
      'gateway_key_service_request_duration_seconds_bucket{le="0.01",operation="verify",outcome="ok"} 3',
      'gateway_key_service_request_duration_seconds_count{operation="verify",outcome="ok"} 4',
      'gateway_key_service_request_duration_seconds_count{operation="verify",outcome="timeout"} 1',
      'gateway_key_service_request_duration_seconds_count{operation="usage",outcome="ok"} 7',
    ].join('\n');
    const name = 'gateway_key_service_request_duration_seconds_count';
    assert.equal(sumOfSamples(exposition, name, { operation: 'verify' }), 5);
    assert.equal(sumOfSamples(exposition, name), 12);
    assert.equal(sumOfSamples(exposition, 'missing_metric'), 0);
  });
});

describe('CPU profile summary', () => {
  it('adds each sample’s time to its function, its module, and the project functions on its stack', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
    const summary = summarizeProfile({
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2] },
        { id: 2, callFrame: frame('handle', 'file:///repo/src/app.ts'), children: [3] },
        { id: 3, callFrame: frame('stringify', 'file:///repo/node_modules/pino/lib/tools.js') },
      ],
      samples: [2, 3, 3, 2],
      timeDeltas: [0, 1000, 2000, 3000],
      startTime: 0,
      endTime: 6000,
    });
    assert.equal(summary.totalMs, 6);
    assert.deepEqual(
      summary.byModule.map((row) => [row.name, row.ms]),
      [
        ['pino', 5],
        ['src/app.ts', 1],
      ],
    );
    assert.deepEqual(
      summary.inclusiveProject.map((row) => [row.name, row.ms]),
      [['handle src/app.ts:1', 6]],
    );
  });

  it('splits CPU per request into the gateway’s own work, Koa, Node and GC', () => {
    const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });
    const work = workPerRequest(
      {
        nodes: [
          { id: 1, callFrame: frame('(root)', ''), children: [2, 5, 6, 7, 8, 9] },
          { id: 2, callFrame: frame('serve', 'file:///repo/dist/app.js'), children: [3, 4, 10] },
          // Node's code the gateway calls itself (a header it sets) is its own work.
          { id: 3, callFrame: frame('setHeader', 'node:_http_outgoing') },
          { id: 4, callFrame: frame('LOG', 'file:///repo/node_modules/pino/lib/tools.js') },
          { id: 5, callFrame: frame('dispatch', 'file:///repo/node_modules/koa-compose/index.js') },
          { id: 6, callFrame: frame('writev', '') },
          { id: 7, callFrame: frame('(garbage collector)', '') },
          { id: 8, callFrame: frame('(idle)', '') },
          { id: 9, callFrame: frame('parserOnIncoming', 'node:_http_server') },
          // A system call the gateway makes itself: its own, and counted apart too.
          { id: 10, callFrame: frame('writeString', '') },
        ],
        // A sample's time is the next delta: 2, 3, 5, 7, 11, 13, 17 (idle), 0 and 4 µs.
        samples: [2, 3, 4, 5, 6, 7, 8, 9, 10],
        timeDeltas: [0, 2, 3, 5, 7, 11, 13, 17, 0, 4],
        startTime: 0,
        endTime: 58,
      },
      2,
    );
    assert.deepEqual(work.microsPerRequest, { own: 7, koa: 3.5, node: 5.5, gc: 6.5, other: 0 });
    assert.equal(work.ownSystemCallMicros, 2);
    assert.deepEqual(
      work.ownByFile.map((row) => [row.name, row.ms]),
      [['app.js', 7]],
    );
  });

  it('names modules by package, project file or node internal', () => {
    assert.equal(moduleOf('file:///x/node_modules/@koa/router/lib/layer.js', 'match'), '@koa/router');
    assert.equal(moduleOf('file:///x/src/http/logRequests.ts', 'f'), 'src/http/logRequests.ts');
    assert.equal(moduleOf('node:_http_outgoing', 'setHeader'), 'node:_http_outgoing');
    assert.equal(moduleOf('', '(garbage collector)'), '(garbage collector)');
  });
});
