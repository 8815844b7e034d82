import type { ApiError } from './errors.js';

// The common envelope of every /v1/api answer: `{ data, meta, errors }`.

export function successBody<T>(data: T): { data: T; meta: Record<string, never>; errors: [] } {
  return { data, meta: {}, errors: [] };
}

export function failureBody(err: ApiError, requestId: string | undefined) {
  const meta = requestId === undefined ? {} : { requestId };
  return { data: null, meta, errors: [{ code: err.code, message: err.message, reason: err.reason }] };
}
