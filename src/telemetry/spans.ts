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
  trace,
} from '@opentelemetry/api';

/**
 * The gateway's spans, through the OpenTelemetry API only. Until startTracing runs,
 * `tracing` stays false and every helper calls its work directly: no span object, no
 * context switch, nothing measurable on a gateway without tracing.
 */

let tracing = false;
const tracer = trace.getTracer('seo-public-rest-gateway');
/** Handed to work when tracing is off, so callers may set attributes unconditionally. */
const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** Called once by startTracing, after the SDK is registered. */
export function markTracingOn(): void {
  tracing = true;
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
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer.startSpan(
    method,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
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
