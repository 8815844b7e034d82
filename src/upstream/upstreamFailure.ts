import { UpstreamError, type UpstreamName } from '../errors.js';
import { DeadlineError } from './deadline.js';

/** An answer with a status the caller did not expect: 429/503 throttled (with Retry-After), anything else a bad answer. */
export function failureFromStatus(
  upstream: UpstreamName,
  call: string,
  status: number,
  retryAfter: string | readonly string[] | null | undefined,
  detail = '',
): UpstreamError {
  const described = `${call}: status ${status} ${detail}`.trim();
  if (status === 429 || status === 503)
    return new UpstreamError(upstream, 'throttled', described, retryAfterSeconds(retryAfter));
  return new UpstreamError(upstream, 'bad_answer', described);
}

/** Anything a call threw: past its deadline, never connected (or dropped), or an answer that could not be read. */
export function failureFromThrown(upstream: UpstreamName, call: string, err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (err instanceof DeadlineError) return new UpstreamError(upstream, 'timeout', `${call}: no answer in time`);
  const unreachable = hasSocketErrorCode(err) || (err instanceof Error && hasSocketErrorCode(err.cause));
  return new UpstreamError(upstream, unreachable ? 'unreachable' : 'bad_answer', `${call}: ${describe(err)}`);
}

/** Socket and connection errors carry a code: ECONNREFUSED, ENOTFOUND, ECONNRESET, UND_ERR_SOCKET, ... */
function hasSocketErrorCode(value: unknown): boolean {
  const code = typeof value === 'object' && value !== null && 'code' in value ? value.code : undefined;
  return typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code);
}

export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}

/** One header's value as text (undici gives repeated headers as a list). */
export function headerText(value: string | readonly string[] | undefined): string {
  return typeof value === 'string' ? value : (value?.join(', ') ?? '');
}

/** Retry-After (seconds or an HTTP date) → whole seconds, clamped: an upstream cannot make consumers wait a day. */
export function retryAfterSeconds(value: string | readonly string[] | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = headerText(value).trim();
  const seconds = /^\d+$/.test(trimmed) ? Number(trimmed) : Math.ceil((Date.parse(trimmed) - Date.now()) / 1000);
  return Number.isNaN(seconds) ? undefined : Math.min(Math.max(seconds, 1), 300);
}
