import type { TracingConfig } from '../config.js';
import { markTracingOn } from './spans.js';

export interface Tracing {
  /** Sends the spans still buffered (tests, and before exit). */
  flush(): Promise<void>;
  /** Flushes and stops exporting; called last on shutdown, after the usage flush. */
  shutdown(): Promise<void>;
}

/** The service name on every span unless OTEL_SERVICE_NAME says otherwise. */
const SERVICE_NAME = 'seo-public-rest-gateway';

/**
 * Starts the OpenTelemetry SDK, which reads its OTEL_* variables itself: the exporter its
 * endpoint, headers and timeout, the environment detector the service name and resource
 * attributes, the tracer provider its sampler. Spans are batched to the OTLP/HTTP endpoint
 * (JSON or protobuf), and every call made through undici (fetch) gets a client span.
 * Only the W3C trace context (traceparent, tracestate) is read from callers and written on
 * upstream calls: no caller's baggage reaches an upstream or a background call.
 * Imported only when tracing is configured, so a gateway without it never loads the SDK
 * and every span helper stays on its no-op path.
 */
export async function startTracing(config: TracingConfig): Promise<Tracing> {
  const [
    sdk,
    { detectResources, envDetector, resourceFromAttributes },
    { ATTR_SERVICE_NAME },
    { W3CTraceContextPropagator },
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
  const provider = new sdk.NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: SERVICE_NAME }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [new sdk.BatchSpanProcessor(new exporters.OTLPTraceExporter())],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation()] });
  markTracingOn({ trustCallerSampling: config.trustCallerSampling });
  return {
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}
