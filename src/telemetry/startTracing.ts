import type { Sampler } from '@opentelemetry/sdk-trace-node';
import { markTracingOn } from './spans.js';
import type { TracingConfig } from './telemetryConfig.js';

export interface Tracing {
  /** Sends the spans still buffered (tests, and before exit). */
  flush(): Promise<void>;
  /** Flushes and stops exporting; called last on shutdown, after the usage flush. */
  shutdown(): Promise<void>;
}

/**
 * Starts the OpenTelemetry SDK: spans batched to the OTLP/HTTP endpoint (JSON or
 * protobuf), W3C traceparent/tracestate and baggage read from callers and written on
 * upstream calls, and a client span for every call made through undici (fetch).
 * Imported only when tracing is configured, so a gateway without it never loads the SDK
 * and every span helper stays on its no-op path.
 */
export async function startTracing(config: TracingConfig): Promise<Tracing> {
  const [
    sdk,
    { resourceFromAttributes },
    { ATTR_SERVICE_NAME },
    core,
    { registerInstrumentations },
    { UndiciInstrumentation },
    exporters,
  ] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/semantic-conventions'),
    import('@opentelemetry/core'),
    import('@opentelemetry/instrumentation'),
    import('@opentelemetry/instrumentation-undici'),
    config.protocol === 'http/json'
      ? import('@opentelemetry/exporter-trace-otlp-http')
      : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const exporter = new exporters.OTLPTraceExporter({ url: config.url, headers: { ...config.headers } });
  const ratio = new sdk.TraceIdRatioBasedSampler(config.samplerRatio);
  const samplers: Record<TracingConfig['sampler'], () => Sampler> = {
    always_on: () => new sdk.AlwaysOnSampler(),
    always_off: () => new sdk.AlwaysOffSampler(),
    traceidratio: () => ratio,
    parentbased_always_on: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOnSampler() }),
    parentbased_always_off: () => new sdk.ParentBasedSampler({ root: new sdk.AlwaysOffSampler() }),
    parentbased_traceidratio: () => new sdk.ParentBasedSampler({ root: ratio }),
  };
  const provider = new sdk.NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
    sampler: samplers[config.sampler](),
    spanProcessors: [new sdk.BatchSpanProcessor(exporter)],
  });
  provider.register({
    propagator: new core.CompositePropagator({
      propagators: [new core.W3CTraceContextPropagator(), new core.W3CBaggagePropagator()],
    }),
  });
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation()] });
  markTracingOn();
  return {
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
