import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStatus } from '../cache/createAnswerCache.js';
import type { UpstreamFailure } from '../errors.js';

export type LimiterOutcome = 'allowed' | 'limited' | 'unavailable';

/** OpenTelemetry's advised boundaries for http.server.request.duration, in seconds. */
const HTTP_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const UPSTREAM_SECONDS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PREFIX = 'gateway_';

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

/**
 * The gateway's Prometheus metrics on a registry of its own, so two apps in one process never share
 * counters. Node's metrics keep prom-client's standard names and HTTP requests OpenTelemetry's, as
 * dashboards query them; the gateway's own work is under `gateway_`. No label ever holds a request
 * input: labels are route patterns, operation names and closed sets of outcomes. Every reporter is a
 * bound arrow, safe to hand over as a callback.
 */
export function createGatewayMetrics(options: { readonly processMetrics?: boolean } = {}) {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics === true) {
    collectDefaultMetrics({ register: registry });
    // Prometheus keeps `_total` for counters (`promtool check metrics` fails a gauge named so), and
    // prom-client names three gauges `nodejs_active_*_total`: their counts by type stay, under
    // `nodejs_active_handles`, `nodejs_active_requests` and `nodejs_active_resources`.
    for (const metric of registry.getMetricsAsArray())
      if (!(metric instanceof Counter) && metric.name.endsWith('_total')) registry.removeSingleMetric(metric.name);
  }
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
    new Counter({ name: `${PREFIX}${name}`, help, labelNames, registers });

  const httpSeconds = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, by route template, method and status code.',
    labelNames: ['http_route', 'http_request_method', 'http_response_status_code'] as const,
    buckets: HTTP_SECONDS_BUCKETS,
    registers,
  });
  /** One upstream's latency by operation and outcome, and failures by operation and failure. */
  const upstreamCalls = (upstream: string, what: string) => {
    const seconds = new Histogram({
      name: `${PREFIX}${upstream}_request_duration_seconds`,
      help: `Latency of ${what}s, by operation and outcome.`,
      labelNames: ['operation', 'outcome'] as const,
      buckets: UPSTREAM_SECONDS_BUCKETS,
      registers,
    });
    const errors = counter(`${upstream}_request_errors_total`, `Failed ${what}s, by operation and failure.`, [
      'operation',
      'failure',
    ]);
    return (operation: string, elapsed: number, outcome: 'ok' | UpstreamFailure): void => {
      seconds.observe({ operation, outcome }, elapsed);
      if (outcome !== 'ok') errors.inc({ operation, failure: outcome });
    };
  };
  const cacheLookups = counter('cache_lookups_total', 'Answer cache lookups, by result (hit, miss, stale).', [
    'result',
  ]);
  const limiterDecisions = counter(
    'limiter_decisions_total',
    'Request limiter decisions (allowed, limited, unavailable).',
    ['decision'],
  );
  /** A gauge asked at every scrape from a reader given later; no reader, or one that throws, reads `fallback`. */
  const readGauge = (name: string, help: string, fallback: number) => {
    let read: (() => number) | undefined;
    new Gauge({
      name: `${PREFIX}${name}`,
      help,
      registers,
      collect() {
        let value = fallback;
        try {
          value = read?.() ?? fallback;
        } catch (_err: unknown) {
          // A scrape must never fail because a reader threw.
        }
        this.set(value);
      },
    });
    return (reader: () => number) => {
      read = reader;
    };
  };
  const observeLimiterAvailable = readGauge(
    'limiter_available',
    '1 while the request limiter can enforce the limit (its store is reachable), else 0.',
    1,
  );
  let readDependencies: (() => Promise<Readonly<Record<string, boolean>>>) | undefined;
  new Gauge({
    name: `${PREFIX}dependency_up`,
    help: '1 while a shared dependency (platform, keyService, redis) answers its probe, else 0.',
    labelNames: ['dependency'] as const,
    registers,
    async collect() {
      const states = (await readDependencies?.()) ?? {};
      for (const [dependency, up] of Object.entries(states)) this.set({ dependency }, up ? 1 : 0);
    },
  });
  const observeUsagePending = readGauge(
    'usage_events_pending',
    'Usage events accepted by this instance and not yet acknowledged by the key service.',
    0,
  );
  const observeOrganizationsTracked = readGauge(
    'organizations_tracked',
    'Organizations this instance keeps admission state for (admitted in the last 5 minutes, or with usage undelivered).',
    0,
  );
  const usageFlushed = counter('usage_events_flushed_total', 'Usage events acknowledged by the key service.');
  const usageFlushFailed = counter(
    'usage_events_flush_failed_total',
    'Usage events in batches that failed to send (they are retried).',
  );

  return {
    httpRequest(route: string, method: string, status: number, seconds: number) {
      httpSeconds.observe(
        { http_route: route, http_request_method: method, http_response_status_code: status },
        seconds,
      );
    },
    platformCall: upstreamCalls('platform', 'platform GraphQL call'),
    keyServiceCall: upstreamCalls('key_service', 'key service call'),
    cacheLookup: (result: CacheStatus) => cacheLookups.inc({ result }),
    limiterDecision: (decision: LimiterOutcome) => limiterDecisions.inc({ decision }),
    observeLimiterAvailability: (read: () => boolean) => observeLimiterAvailable(() => (read() ? 1 : 0)),
    observeDependencies(read: () => Promise<Readonly<Record<string, boolean>>>) {
      readDependencies = read;
    },
    observeUsagePending,
    observeOrganizationsTracked,
    usageFlushed: (events: number) => usageFlushed.inc(events),
    usageFlushFailed: (events: number) => usageFlushFailed.inc(events),
    async exposition(): Promise<{ contentType: string; text: string }> {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}
