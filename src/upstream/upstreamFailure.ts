import { UpstreamError, type UpstreamName } from '../errors.js';
import { DeadlineError } from './deadline.js';

/** The one classifier of upstream failures; `call` names the operation for the log detail only. */

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
  if (hasSocketErrorCode(err) || (err instanceof Error && hasSocketErrorCode(err.cause))) {
    return new UpstreamError(upstream, 'unreachable', `${call}: ${describe(err)}`);
  }
  return new UpstreamError(upstream, 'bad_answer', `${call}: ${describe(err)}`);
}

/** Socket and connection errors carry a code: ECONNREFUSED, ENOTFOUND, ECONNRESET, UND_ERR_SOCKET, ... */
function hasSocketErrorCode(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || !('code' in value)) return false;
  const code = value.code;
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
export function retryAfterSeconds(
  value: string | readonly string[] | null | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = headerText(value).trim();
  let seconds: number;
  if (/^\d+$/.test(trimmed)) {
    seconds = Number(trimmed);
  } else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    seconds = Math.ceil((at - now) / 1000);
  }
  return Math.min(Math.max(seconds, 1), 300);
}
