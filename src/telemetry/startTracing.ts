import type { Config } from '../config.js';
import { markTracingOn } from './spans.js';

/**
 * Starts the OpenTelemetry SDK, which reads its OTEL_* variables itself (exporter, resource,
 * sampler); every call made through undici gets a client span. Only the W3C trace context is
 * propagated: no caller's baggage reaches an upstream. Imported only when tracing is configured,
 * so a gateway without it never loads the SDK.
 */
export async function startTracing(config: NonNullable<Config['tracing']>) {
  // One after another: loading them side by side measured no faster at start-up.
  const sdk = await import('@opentelemetry/sdk-trace-node');
  const { detectResources, envDetector, resourceFromAttributes } = await import('@opentelemetry/resources');
  const { ATTR_SERVICE_NAME } = await import('@opentelemetry/semantic-conventions');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { registerInstrumentations } = await import('@opentelemetry/instrumentation');
  const { UndiciInstrumentation } = await import('@opentelemetry/instrumentation-undici');
  const exporters = await (config.protocol === 'http/json'
    ? import('@opentelemetry/exporter-trace-otlp-http')
    : import('@opentelemetry/exporter-trace-otlp-proto'));
  const provider = new sdk.NodeTracerProvider({
    // OTEL_SERVICE_NAME, read by the environment detector, overrides this default name.
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'seo-public-rest-gateway' }).merge(
      detectResources({ detectors: [envDetector] }),
    ),
    spanProcessors: [new sdk.BatchSpanProcessor(new exporters.OTLPTraceExporter())],
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  registerInstrumentations({ tracerProvider: provider, instrumentations: [new UndiciInstrumentation()] });
  markTracingOn({ trustCallerSampling: config.trustCallerSampling });
  // `shutdown` flushes and stops exporting: main.ts calls it last, after the usage flush.
  return { shutdown: () => provider.shutdown() };
}
