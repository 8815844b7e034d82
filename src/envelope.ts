import type { ApiError } from './errors.js';

/** The common envelope of every /v1/api answer: `{ data, meta, errors }`. */

export interface ErrorEntry {
  code: string;
  message: string;
  reason?: string;
}

export interface SuccessEnvelope<T> {
  data: T;
  meta: Record<string, never>;
  errors: [];
}

export interface FailureEnvelope {
  data: null;
  meta: { requestId?: string };
  errors: ErrorEntry[];
}

export function successBody<T>(data: T): SuccessEnvelope<T> {
  return { data, meta: {}, errors: [] };
}

export function failureBody(err: ApiError, requestId: string | undefined): FailureEnvelope {
  const entry: ErrorEntry = { code: err.code, message: err.message };
  if (err.reason !== undefined) entry.reason = err.reason;
  return { data: null, meta: requestId === undefined ? {} : { requestId }, errors: [entry] };
}
