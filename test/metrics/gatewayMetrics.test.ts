import assert from 'node:assert/strict';
import nock from 'nock';
import { register as globalRegistry } from 'prom-client';
import { createApp } from '../../src/app.js';
import { createGatewayMetrics, type GatewayMetrics } from '../../src/metrics/gatewayMetrics.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { fakeServices, PLATFORM_TOKEN, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

/** The value of one sample in the exposition text, 0 when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.slice(name.length).split(' ')[0] ?? '';
    if (wanted.every((pair) => labelText.includes(pair))) return Number(line.split(' ').at(-1));
  }
  return 0;
}

describe('metrics', () => {
  describe('GET /metrics after real requests', () => {
    let metrics: GatewayMetrics;
    let server: Awaited<ReturnType<typeof listen>>;

    before(async () => {
      metrics = createGatewayMetrics({ processMetrics: true });
      const platform = createPlatformClient({
        url: PLATFORM_URL,
        token: PLATFORM_TOKEN,
        timeoutMs: 500,
        onCall: metrics.platformCall,
      });
      server = await listen(createApp(fakeServices({ metrics, platform })));
    });
    after(async () => {
      await server.close();
    });

    async function scrape(): Promise<{ contentType: string | null; text: string }> {
      const res = await fetch(`${server.url}/metrics`);
      assert.equal(res.status, 200);
      return { contentType: res.headers.get('content-type'), text: await res.text() };
    }

    it('serves the Prometheus text format without a key', async () => {
      const { contentType, text } = await scrape();
      assert.match(contentType ?? '', /^text\/plain; version=0\.0\.4/);
      assert.match(text, /# TYPE http_server_request_duration_seconds histogram/);
    });

    it("names Node's process and runtime metrics as Node.js dashboards expect, without the gateway's prefix", async () => {
      const { text } = await scrape();
      for (const name of [
        'process_cpu_seconds_total',
        'process_resident_memory_bytes',
        'process_start_time_seconds',
        'nodejs_eventloop_lag_seconds',
        'nodejs_heap_size_used_bytes',
        'nodejs_gc_duration_seconds',
        'nodejs_version_info',
      ]) {
        assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
      }
      assert.doesNotMatch(text, /gateway_(process|nodejs)_/);
      assert.doesNotMatch(text, /gateway_http_/, 'requests are counted once, under the standard name');
    });

    it('follows the naming rules `promtool check metrics` lints: `_total` on counters only, HELP, snake_case, base units', async () => {
      const { text } = await scrape();
      const types = new Map<string, string>();
      for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) types.set(match[1] ?? '', match[2] ?? '');
      const helped = new Set([...text.matchAll(/^# HELP (\S+) \S/gm)].map((match) => match[1]));
      assert.ok(types.size > 30, `${types.size} metrics`);
      const problems: string[] = [];
      for (const [name, type] of types) {
        if ((type === 'counter') !== name.endsWith('_total'))
          problems.push(`${name} (${type}): _total is for counters`);
        if (!helped.has(name)) problems.push(`${name}: no HELP`);
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) problems.push(`${name}: not snake_case`);
        if (!['histogram', 'summary'].includes(type) && /_(bucket|count|sum)$/.test(name))
          problems.push(`${name}: a reserved suffix`);
        if (/_(ms|milliseconds|microseconds|nanoseconds|kilobytes|megabytes|minutes|hours)(_|$)/.test(name))
          problems.push(`${name}: not a base unit`);
        if (/_(gauge|counter|histogram|summary)(_|$)/.test(name)) problems.push(`${name}: its type in its name`);
      }
      assert.deepEqual(problems, []);
      // The counts by type that the removed `nodejs_active_*_total` gauges added up are still there.
      for (const name of ['nodejs_active_handles', 'nodejs_active_requests', 'nodejs_active_resources'])
        assert.equal(types.get(name), 'gauge', name);
    });

    it('counts requests by route and status, their latency, and platform calls by operation and outcome', async () => {
      const before = (await scrape()).text;
      const ok = nock('http://platform.test')
        .post('/graphql')
        .reply(200, { data: { organization: { siteLookup: [] } } });
      const failing = nock('http://platform.test').post('/graphql').reply(500, 'no');
      const auth = { authorization: 'Bearer key-org-a' };
      for (const [path, headers] of [
        ['/v1/api/audit-issues?site=a.com', auth],
        ['/v1/api/audit-issues?site=a.com', auth],
        ['/v1/api/audit-issues?site=a.com', {}],
        ['/v1/api/nope', {}],
      ] as const) {
        await (await fetch(`${server.url}${path}`, { headers })).arrayBuffer();
      }
      for (const path of ['/v1/api/audit-issues', '/V1/API/AUDIT-ISSUES/', '/docs/assets/x.css', '/readyz']) {
        await (await fetch(`${server.url}${path}`, { method: 'POST' })).arrayBuffer();
      }
      ok.done();
      failing.done();
      const after = (await scrape()).text;
      const moved = (name: string, labels: Record<string, string>) =>
        sample(after, name, labels) - sample(before, name, labels);

      const route = '/v1/api/audit-issues';
      const requests = (http_route: string, http_request_method: string, http_response_status_code: string) =>
        moved('http_server_request_duration_seconds_count', {
          http_route,
          http_request_method,
          http_response_status_code,
        });
      assert.equal(requests(route, 'GET', '404'), 1);
      assert.equal(requests(route, 'GET', '502'), 1);
      assert.equal(requests(route, 'GET', '401'), 1);
      assert.equal(requests(route, 'POST', '405'), 1, 'a 405 counts under its route');
      assert.equal(requests('unmatched', 'POST', '404'), 1, 'another case and a trailing slash are another path');
      assert.equal(requests('/docs/assets/:name', 'POST', '405'), 1);
      assert.equal(requests('/readyz', 'POST', '405'), 1);
      assert.equal(requests('unmatched', 'GET', '404'), 1);
      assert.equal(requests('/metrics', 'GET', '200'), 1);
      assert.match(
        after,
        /http_server_request_duration_seconds_bucket\{le="0\.005",http_route="\/v1\/api\/audit-issues"/,
      );
      assert.equal(
        moved('gateway_platform_request_duration_seconds_count', { operation: 'LatestAudit', outcome: 'ok' }),
        1,
      );
      assert.equal(
        moved('gateway_platform_request_duration_seconds_count', { operation: 'LatestAudit', outcome: 'bad_answer' }),
        1,
      );
      assert.equal(
        moved('gateway_platform_request_errors_total', { operation: 'LatestAudit', failure: 'bad_answer' }),
        1,
      );
      assert.doesNotMatch(after, /a\.com|org_a|atl_/, 'no request input or organization in any label');
    });
  });

  describe('the hooks other modules call', () => {
    it('move their metrics, on a registry of their own', async () => {
      const metrics = createGatewayMetrics();
      let pending = 3;
      metrics.observeUsagePending(() => pending);
      metrics.cacheLookup('hit');
      metrics.cacheLookup('hit');
      metrics.cacheLookup('miss');
      metrics.cacheLookup('stale');
      metrics.limiterDecision('allowed');
      metrics.limiterDecision('limited');
      metrics.limiterDecision('unavailable');
      metrics.keyServiceCall('verify', 0.02, 'ok');
      metrics.keyServiceCall('verify', 5, 'timeout');
      metrics.usageFlushed(25);
      metrics.usageFlushFailed(4);

      let text = (await metrics.exposition()).text;
      assert.equal(sample(text, 'gateway_cache_lookups_total', { result: 'hit' }), 2);
      assert.equal(sample(text, 'gateway_cache_lookups_total', { result: 'miss' }), 1);
      assert.equal(sample(text, 'gateway_cache_lookups_total', { result: 'stale' }), 1);
      for (const decision of ['allowed', 'limited', 'unavailable']) {
        assert.equal(sample(text, 'gateway_limiter_decisions_total', { decision }), 1, decision);
      }
      for (const outcome of ['ok', 'timeout']) {
        assert.equal(
          sample(text, 'gateway_key_service_request_duration_seconds_count', { operation: 'verify', outcome }),
          1,
        );
      }
      assert.equal(
        sample(text, 'gateway_key_service_request_errors_total', { operation: 'verify', failure: 'timeout' }),
        1,
      );
      assert.equal(sample(text, 'gateway_usage_events_flushed_total'), 25);
      assert.equal(sample(text, 'gateway_usage_events_flush_failed_total'), 4);
      assert.equal(sample(text, 'gateway_usage_events_pending'), 3);
      assert.equal(sample(text, 'gateway_limiter_available'), 1);

      pending = 0;
      text = (await metrics.exposition()).text;
      assert.equal(sample(text, 'gateway_usage_events_pending'), 0, 'the gauge is read at scrape time');

      let available = true;
      metrics.observeLimiterAvailability(() => available);
      assert.equal(sample((await metrics.exposition()).text, 'gateway_limiter_available'), 1);
      available = false;
      assert.equal(sample((await metrics.exposition()).text, 'gateway_limiter_available'), 0);

      // Never prom-client's global registry, and never shared between two instances.
      assert.equal(globalRegistry.getSingleMetric('gateway_cache_lookups_total'), undefined);
      assert.equal(
        sample((await createGatewayMetrics().exposition()).text, 'gateway_cache_lookups_total', { result: 'hit' }),
        0,
      );
    });

    it('a reader that throws does not break the scrape', async () => {
      const metrics = createGatewayMetrics();
      metrics.observeUsagePending(() => {
        throw new Error('gone');
      });
      assert.equal(sample((await metrics.exposition()).text, 'gateway_usage_events_pending'), 0);
    });
  });
});
