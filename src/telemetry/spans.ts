import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
} from '@opentelemetry/api';

/**
 * The gateway's spans, through the OpenTelemetry API only. Until startTracing runs,
 * `tracing` stays false and every helper calls its work directly: no span object, no
 * context switch, nothing measurable on a gateway without tracing.
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

export interface SpanOptions {
  readonly attributes?: Attributes;
  /** A trace of its own (background work such as the usage flush), not a child of whatever request scheduled it. */
  readonly root?: boolean;
}

/**
 * Runs `work` inside a span named `name` (a child of the active one), ends it when the
 * work settles, and marks it failed when the work throws. The one wrapper call sites use.
 */
export function inSpan<T>(name: string, work: (span: Span) => Promise<T>, options: SpanOptions = {}): Promise<T> {
  if (!tracing) return work(NO_SPAN);
  const spanOptions = {
    ...(options.attributes ? { attributes: options.attributes } : {}),
    ...(options.root ? { root: true } : {}),
  };
  return tracer.startActiveSpan(name, spanOptions, async (span) => {
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

export interface ServerSpan {
  readonly span: Span;
  /** The context to run the request in: the caller's trace (traceparent/tracestate) continued. */
  readonly context: Context;
}

/** The span of one incoming request, continuing the caller's trace when its headers carry one. */
export function startServerSpan(method: string, headers: Record<string, string | string[] | undefined>): ServerSpan {
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

/** Runs `work` with `ctx` active (its spans become children of the request's). */
export function withContext<T>(ctx: Context, work: () => T): T {
  return context.with(ctx, work);
}

/** The trace id of the active span, for log lines; undefined when not traced. */
export function activeTraceId(): string | undefined {
  if (!tracing) return undefined;
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const { traceId } = span.spanContext();
  return trace.isSpanContextValid(span.spanContext()) ? traceId : undefined;
}

/** Writes traceparent/tracestate for the active span into outgoing headers (a no-op untraced). */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (tracing) propagation.inject(context.active(), headers);
}
