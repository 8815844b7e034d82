import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { CacheStatus } from '../cache/answerCache.js';
import type { UpstreamFailure } from '../errors.js';

/** What the request limiter decided for one request. */
export type LimiterOutcome = 'allowed' | 'limited' | 'unavailable';

/** How an upstream call ended: the shape the platform client's `onCall` already reports. */
export type UpstreamOutcome = 'ok' | UpstreamFailure;

export interface GatewayMetricsOptions {
  /** Also collect Node's process metrics (CPU, memory, event loop, GC). gateway.ts: true. */
  readonly processMetrics?: boolean;
}

/** OpenTelemetry's advised boundaries for http.server.request.duration, in seconds. */
const HTTP_SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
const UPSTREAM_SECONDS_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** The gateway's own metrics; Node's and the HTTP ones keep their standard names. */
const PREFIX = 'gateway_';

export type GatewayMetrics = ReturnType<typeof createGatewayMetrics>;

/**
 * The gateway's Prometheus metrics on a registry of its own (never prom-client's global
 * one, so two apps in one process never share counters). Other modules report through
 * these small functions; each is a bound arrow, safe to hand over as a callback.
 * No label ever holds an organization, a key or any other request input: labels are
 * route patterns, operation names and closed sets of outcomes.
 *
 * Names: Node's process and runtime metrics under prom-client's standard names (what
 * Node.js dashboards query), HTTP requests as OpenTelemetry's HTTP server convention in
 * Prometheus form, and the gateway's own work under `gateway_`.
 */
export function createGatewayMetrics(options: GatewayMetricsOptions = {}) {
  const registry = new Registry();
  const registers = [registry];
  if (options.processMetrics === true) collectDefaultMetrics({ register: registry });

  const httpSeconds = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP server requests, by route template, method and status code.',
    labelNames: ['http_route', 'http_request_method', 'http_response_status_code'] as const,
    buckets: HTTP_SECONDS_BUCKETS,
    registers,
  });
  /** Latency by operation and outcome, and failures by operation and failure, of one upstream. */
  const upstreamCalls = (upstream: string, what: string) => {
    const seconds = new Histogram({
      name: `${PREFIX}${upstream}_request_duration_seconds`,
      help: `Latency of ${what}s, by operation and outcome.`,
      labelNames: ['operation', 'outcome'] as const,
      buckets: UPSTREAM_SECONDS_BUCKETS,
      registers,
    });
    const errors = new Counter({
      name: `${PREFIX}${upstream}_request_errors_total`,
      help: `Failed ${what}s, by operation and failure.`,
      labelNames: ['operation', 'failure'] as const,
      registers,
    });
    /** One call: operation is e.g. `Keywords`, or `verify`, `usage`, `events`, `probe` (the clients' onCall). */
    return (operation: string, elapsed: number, outcome: UpstreamOutcome): void => {
      seconds.observe({ operation, outcome }, elapsed);
      if (outcome !== 'ok') errors.inc({ operation, failure: outcome });
    };
  };
  const cacheLookups = new Counter({
    name: `${PREFIX}cache_lookups_total`,
    help: 'Answer cache lookups, by result (hit, miss, stale).',
    labelNames: ['result'] as const,
    registers,
  });
  const limiterDecisions = new Counter({
    name: `${PREFIX}limiter_decisions_total`,
    help: 'Request limiter decisions (allowed, limited, unavailable).',
    labelNames: ['decision'] as const,
    registers,
  });

  let readLimiterAvailable: (() => boolean) | undefined;
  new Gauge({
    name: `${PREFIX}limiter_available`,
    help: '1 while the request limiter can enforce the limit (its store is reachable), else 0.',
    registers,
    collect() {
      this.set(readOr(readLimiterAvailable, true) ? 1 : 0);
    },
  });

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

  let readUsagePending: (() => number) | undefined;
  new Gauge({
    name: `${PREFIX}usage_events_pending`,
    help: 'Usage events accepted by this instance and not yet acknowledged by the key service.',
    registers,
    collect() {
      this.set(readOr(readUsagePending, 0));
    },
  });
  const usageFlushed = new Counter({
    name: `${PREFIX}usage_events_flushed_total`,
    help: 'Usage events acknowledged by the key service.',
    registers,
  });
  const usageFlushFailed = new Counter({
    name: `${PREFIX}usage_events_flush_failed_total`,
    help: 'Usage events in batches that failed to send (they are retried).',
    registers,
  });

  return {
    registry,
    /** One answered HTTP request (the request middleware calls this). */
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
    /** A reader asked at every scrape: can the limiter enforce the limit (its store is reachable)? */
    observeLimiterAvailability(read: () => boolean) {
      readLimiterAvailable = read;
    },
    /** A reader asked at every scrape: the shared dependencies (platform, key service, Redis), each up or not. */
    observeDependencies(read: () => Promise<Readonly<Record<string, boolean>>>) {
      readDependencies = read;
    },
    /** A reader asked at every scrape: usage events accepted here, not yet acknowledged. */
    observeUsagePending(read: () => number) {
      readUsagePending = read;
    },
    /** A batch of usage events was acknowledged by the key service. */
    usageFlushed(events: number) {
      if (events > 0) usageFlushed.inc(events);
    },
    /** A batch of usage events failed to send (it will be retried). */
    usageFlushFailed(events: number) {
      if (events > 0) usageFlushFailed.inc(events);
    },
    async exposition(): Promise<{ contentType: string; text: string }> {
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

/** A scrape must never fail because a reader threw: fall back to a default. */
function readOr<T>(read: (() => T) | undefined, fallback: T): T {
  if (read === undefined) return fallback;
  try {
    return read();
  } catch (_err: unknown) {
    return fallback;
  }
}
