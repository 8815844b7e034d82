import {
  type Context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  type SpanOptions,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';

/**
 * The gateway's spans, through the OpenTelemetry API only. Until startTracing runs, every helper
 * calls its work directly: no span object, no context switch, nothing measurable without tracing.
 */

let tracing = false;
let trustCallerSampling = false;
const tracer = trace.getTracer('seo-public-rest-gateway');
/** Handed to work when tracing is off, so callers may set attributes unconditionally. */
const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Called once by startTracing, after the SDK is registered. */
export function markTracingOn(options: { trustCallerSampling: boolean }): void {
  tracing = true;
  trustCallerSampling = options.trustCallerSampling;
}

export function tracingOn(): boolean {
  return tracing;
}

/**
 * Runs `work` in a span (a child of the active one unless `root`), ended when the work settles and
 * marked failed when it throws. Untraced, work that answers at once is answered at once (no promise).
 */
export function inSpan<T>(name: string, work: (span: Span) => Promise<T>, options?: SpanOptions): Promise<T>;
export function inSpan<T>(name: string, work: (span: Span) => T | Promise<T>, options?: SpanOptions): T | Promise<T>;
export function inSpan<T>(
  name: string,
  work: (span: Span) => T | Promise<T>,
  options: SpanOptions = {},
): T | Promise<T> {
  if (!tracing) return work(NO_SPAN);
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await work(span);
    } catch (err: unknown) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** The span of one incoming request, and the context to run it in: the caller's trace continued. */
export function startServerSpan(method: string, headers: Record<string, string | string[] | undefined>) {
  const parent = callerSamplingDecided(propagation.extract(ROOT_CONTEXT, headers));
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/**
 * A caller's trace is continued, but its sampled flag is the caller's to set: anyone could ask
 * for every request to be exported. Unless TRUST_CALLER_SAMPLING, the configured sampler decides
 * as for a trace of the gateway's own (a root span, a fresh trace id the caller cannot pick), and
 * the caller's context carries that decision. The probe span is never ended, so never exported.
 */
function callerSamplingDecided(extracted: Context): Context {
  const caller = trace.getSpanContext(extracted);
  if (caller === undefined || trustCallerSampling) return extracted;
  const probe = tracer.startSpan('sampling decision', { root: true });
  const sampled = (probe.spanContext().traceFlags & TraceFlags.SAMPLED) !== 0;
  return trace.setSpanContext(extracted, {
    ...caller,
    traceFlags: sampled ? caller.traceFlags | TraceFlags.SAMPLED : caller.traceFlags & ~TraceFlags.SAMPLED,
  });
}

/** Names the server span after its route template, as the HTTP conventions ask, and ends it. */
export function endServerSpan(span: Span, method: string, route: string | undefined, status: number): void {
  if (route !== undefined) {
    span.updateName(`${method} ${route}`);
    span.setAttribute('http.route', route);
  }
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** The trace id of the active span, for log lines; undefined when not traced. */
export function activeTraceId(): string | undefined {
  const spanContext = tracing ? trace.getActiveSpan()?.spanContext() : undefined;
  return spanContext !== undefined && trace.isSpanContextValid(spanContext) ? spanContext.traceId : undefined;
}
