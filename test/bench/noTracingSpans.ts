import { type Context, INVALID_SPAN_CONTEXT, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api';
import type * as Spans from '../../src/telemetry/spans.js';

/**
 * src/telemetry/spans.ts with the tracing compiled out, for the bench's `gateway-untraced`
 * build only (compiledGateway.ts puts it in place of spans.js): every helper runs its work
 * directly and nothing ever checks whether tracing is on. The gateway without tracing
 * configured is measured against it, so what the tracing hooks cost when off is a figure.
 */

const NO_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

export function markTracingOn(): void {}

export function tracingOn(): boolean {
  return false;
}

export function inSpan<T>(_name: string, work: (span: Span) => Promise<T>): Promise<T>;
export function inSpan<T>(_name: string, work: (span: Span) => T | Promise<T>): T | Promise<T>;
export function inSpan<T>(_name: string, work: (span: Span) => T | Promise<T>): T | Promise<T> {
  return work(NO_SPAN);
}

export function startServerSpan(): { span: Span; context: Context } {
  return { span: NO_SPAN, context: ROOT_CONTEXT };
}

export function endServerSpan(): void {}

export function activeTraceId(): string | undefined {
  return undefined;
}

/** The same exports as the real module, checked by the type checker. */
export const SAME_EXPORTS = {
  markTracingOn,
  tracingOn,
  inSpan,
  startServerSpan,
  endServerSpan,
  activeTraceId,
} satisfies typeof Spans;
