import { ApiError, CODE_BY_REASON, type ErrorCode } from '../errors.js';

/** One stable `reason` per refusal; no message holds anything the caller sent. */
const MESSAGES = {
  missing_key: 'An API key is required. Send it as "Authorization: Bearer <key>" or "X-API-Key: <key>".',
  malformed_key: 'The API key is malformed.',
  unsupported_scheme: 'Unsupported authorization scheme. Send the API key as "Authorization: Bearer <key>".',
  conflicting_credentials: 'The request carries more than one different API key. Send exactly one.',
  key_in_query:
    'API keys must never be sent in the URL. Send the key in the Authorization or X-API-Key header, ' +
    'and rotate the exposed key: revoke it and create a new one.',
  invalid_key: 'The API key is not valid.',
  expired_key: 'The API key has expired.',
  not_an_api_key: 'This credential is not an API key. Public API requests need an organization API key.',
  missing_permission: 'The API key lacks the read permission.',
  plan_not_eligible: "The organization's plan does not include API access. The Pro plan or higher is required.",
  usage_ceiling_reached: "The organization's usage ceiling for this period has been reached.",
  unknown_key_budget_spent: 'Too many unknown API keys were presented from this address. Retry later with a valid key.',
} as const;

export type AuthFailureReason = keyof typeof MESSAGES;

/** 429 once an address spent its budget of unknown keys, 403 for a known caller who may not pass, else 401. */
export function authFailure(reason: AuthFailureReason, retryAfterSeconds?: number): ApiError {
  const code: ErrorCode = CODE_BY_REASON[reason];
  const headers: Record<string, string> =
    code === 'RATE_LIMITED'
      ? { 'Retry-After': String(retryAfterSeconds ?? 1) }
      : code === 'FORBIDDEN'
        ? {}
        : { 'WWW-Authenticate': 'Bearer' };
  return new ApiError<ErrorCode>(code, MESSAGES[reason], { reason, headers });
}
