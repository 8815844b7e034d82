// One error type for every failure the gateway answers, a closed set of codes and reasons, and one
// code → status map. Upstream failures arrive as UpstreamError and are translated here, and only here.

export const STATUS_BY_CODE = Object.freeze({
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  REQUEST_TIMEOUT: 408,
  URI_TOO_LONG: 414,
  HEADERS_TOO_LARGE: 431,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UPSTREAM_ERROR: 502,
  SERVICE_UNAVAILABLE: 503,
  UPSTREAM_TIMEOUT: 504,
} as const);

export type ErrorCode = keyof typeof STATUS_BY_CODE;

/** Every code, in the order above: the OpenAPI document's enum is generated from it. */
export const ERROR_CODES = Object.keys(STATUS_BY_CODE) as [ErrorCode, ...ErrorCode[]];

/** Every `reason` the gateway sends, with the one code it refines: closed, so the document's enums list every value. */
export const CODE_BY_REASON = Object.freeze({
  missing_key: 'UNAUTHORIZED',
  malformed_key: 'UNAUTHORIZED',
  unsupported_scheme: 'UNAUTHORIZED',
  conflicting_credentials: 'UNAUTHORIZED',
  key_in_query: 'UNAUTHORIZED',
  invalid_key: 'UNAUTHORIZED',
  expired_key: 'UNAUTHORIZED',
  not_an_api_key: 'FORBIDDEN',
  missing_permission: 'FORBIDDEN',
  plan_not_eligible: 'FORBIDDEN',
  usage_ceiling_reached: 'FORBIDDEN',
  unknown_key_budget_spent: 'RATE_LIMITED',
  request_limit_reached: 'RATE_LIMITED',
  concurrency_share_exceeded: 'RATE_LIMITED',
  unreadable_request: 'BAD_REQUEST',
  site_missing: 'BAD_REQUEST',
  site_repeated: 'BAD_REQUEST',
  site_too_long: 'BAD_REQUEST',
  site_ambiguous: 'BAD_REQUEST',
  site_not_found: 'NOT_FOUND',
  route_not_found: 'NOT_FOUND',
  method_not_allowed: 'METHOD_NOT_ALLOWED',
  request_timeout: 'REQUEST_TIMEOUT',
  uri_too_long: 'URI_TOO_LONG',
  headers_too_large: 'HEADERS_TOO_LARGE',
  internal_error: 'INTERNAL',
  platform_failed: 'UPSTREAM_ERROR',
  platform_timeout: 'UPSTREAM_TIMEOUT',
  key_service_unavailable: 'SERVICE_UNAVAILABLE',
  verification_busy: 'SERVICE_UNAVAILABLE',
  usage_backlog: 'SERVICE_UNAVAILABLE',
  limiter_unavailable: 'SERVICE_UNAVAILABLE',
  not_ready: 'SERVICE_UNAVAILABLE',
  platform_busy: 'SERVICE_UNAVAILABLE',
  shutting_down: 'SERVICE_UNAVAILABLE',
} as const satisfies Record<string, ErrorCode>);

export type ErrorReason = keyof typeof CODE_BY_REASON;

export const ERROR_REASONS = Object.keys(CODE_BY_REASON) as [ErrorReason, ...ErrorReason[]];

/** The reasons that may refine `code`, in the order of CODE_BY_REASON. */
export function reasonsOf(code: ErrorCode): ErrorReason[] {
  return ERROR_REASONS.filter((reason) => CODE_BY_REASON[reason] === code);
}

export type ReasonOf<C extends ErrorCode> = {
  [R in ErrorReason]: (typeof CODE_BY_REASON)[R] extends C ? R : never;
}[ErrorReason];

/** A failure whose code and message are safe to show to the consumer. */
export class ApiError<out C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number;
  readonly reason: ErrorReason;
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    readonly code: C,
    message: string,
    // `headers`: those that belong to this failure (Retry-After, Allow, WWW-Authenticate).
    options: { reason: ReasonOf<C>; headers?: Record<string, string>; cause?: unknown },
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.status = STATUS_BY_CODE[code];
    this.reason = options.reason;
    this.headers = Object.freeze({ ...options.headers });
  }
}

export type UpstreamName = 'platform' | 'key-service';

/** What went wrong talking to an upstream. `detail` is for logs only: it never reaches a response body. */
export type UpstreamFailure =
  | 'timeout' // no answer within UPSTREAM_TIMEOUT_MS
  | 'throttled' // 429 or 503, possibly with Retry-After
  | 'unreachable' // connection refused, reset, DNS
  | 'bad_answer'; // 5xx, malformed body, GraphQL errors, 401 to our service token

export class UpstreamError extends Error {
  constructor(
    readonly upstream: UpstreamName,
    readonly failure: UpstreamFailure,
    readonly detail: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(`${upstream} ${failure}: ${detail}`);
    this.name = 'UpstreamError';
  }
}

const DEFAULT_RETRY_AFTER_SECONDS = 5;

/** Anything thrown → the ApiError the consumer sees. Unknown errors become a bare 500. */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (!(err instanceof UpstreamError)) {
    return new ApiError('INTERNAL', 'An internal error occurred.', { reason: 'internal_error', cause: err });
  }
  const options = {
    headers: { 'Retry-After': String(err.retryAfterSeconds ?? DEFAULT_RETRY_AFTER_SECONDS) },
    cause: err,
  };
  // The key service decides who gets in: when it cannot answer, fail closed with 503.
  if (err.upstream === 'key-service') {
    const message = 'Authentication is temporarily unavailable. Retry later.';
    return new ApiError('SERVICE_UNAVAILABLE', message, { reason: 'key_service_unavailable', ...options });
  }
  if (err.failure === 'timeout') {
    const message = 'The data source did not answer in time.';
    return new ApiError('UPSTREAM_TIMEOUT', message, { reason: 'platform_timeout', ...options });
  }
  if (err.failure === 'throttled') {
    const message = 'The data source is busy. Retry later.';
    return new ApiError('SERVICE_UNAVAILABLE', message, { reason: 'platform_busy', ...options });
  }
  return new ApiError('UPSTREAM_ERROR', 'The data source failed to answer.', { reason: 'platform_failed', ...options });
}
