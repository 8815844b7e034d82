import type { HeaderObject, ParameterObject, SchemaObject } from 'openapi3-ts/oas31';
import type { ErrorCode } from '../errors.js';
import { MAX_HEADER_LINES } from '../http/createHttpServer.js';
import { REQUEST_ID_PATTERN } from '../http/requestId.js';
import { CALLER_VARY as VARY } from '../http/securityHeaders.js';
import { ALLOW } from '../http/unmatchedPaths.js';

/* What the OpenAPI document says in words; patterns are those of the values the gateway writes. */

export const DESCRIPTION = [
  'Read-only data about a tracked site: keyword rankings, AI visibility, tracked keywords and the latest audit summary.',
  '',
  'Every request carries an organization API key (`atl_…`), preferably as `Authorization: Bearer <key>`, ' +
    'or as `X-API-Key: <key>`. Never put a key in a URL: such a request is refused and the key should be rotated.',
  '',
  'Every answer is JSON in the envelope `{ data, meta, errors }`. A failure has `data: null`, ' +
    '`meta.requestId`, and `errors: [{ code, message, reason }]`: `reason` is a stable refinement of the code ' +
    "(the `ErrorReason` schema lists them all). A 429 is always your own excess; a 503 is the gateway's own " +
    'unavailability. Every answer carries `X-Request-Id`; ' +
    'send your own (1 to 128 of `A-Z a-z 0-9 . _ : -`) to follow a request through.',
  '',
  'Answers to authenticated requests carry `RateLimit-Policy` and `RateLimit`; beyond the limit the answer is ' +
    '429 `request_limit_reached` with `Retry-After`. Each successful call (200 or 304) counts toward usage.',
  '',
  '**Concurrency.** Each gateway instance runs a bounded number of calls to the data source at once, shared ' +
    'between organizations: an organization alone may use all of it; when several wait, free places go to them ' +
    'in turn, so a quiet organization waits about one data-source answer behind a busy one. A call waits for a ' +
    'place up to the upstream deadline (then 504). Only when the waiting room is full is a call refused, and then ' +
    'from the organization holding the most calls: 429 `concurrency_share_exceeded` with `Retry-After`. Why: a ' +
    'flood from one organization must neither stall the others nor be refused while capacity is idle.',
  '',
  '**Unknown keys.** Each client (an IPv4 address, or an IPv6 /64) may present a limited number of keys that ' +
    'turn out unknown per minute; beyond it, keys never seen to succeed get 429 `unknown_key_budget_spent` with ' +
    '`Retry-After` (no `RateLimit` fields: no organization is known) before any key check. A valid key is never ' +
    'refused by it: new keys of one client are checked a few at a time, the others wait their turn. Why: ' +
    'guessing keys must stay slow and cheap to refuse.',
  '',
  'A path that exists asked with a method other than GET or HEAD answers 405 with `Allow` (OPTIONS: 200 with ' +
    '`Allow`, and no CORS fields); an unknown path answers 404. None of these needs a key.',
].join('\n');

/** What each failure means to a consumer, and the headers it carries besides X-Request-Id. */
export const FAILURES: Readonly<Record<ErrorCode, { readonly text: string; readonly headers: readonly string[] }>> = {
  BAD_REQUEST: {
    text: '`site` is missing, blank, repeated, too long, or matches more than one site (retry with the exact domain); or the request could not be read.',
    headers: ['RateLimit-Policy?', 'RateLimit?'],
  },
  UNAUTHORIZED: {
    text: 'The API key is missing, malformed, unknown or expired; a key was put in the URL (use a header and rotate that key); an unsupported scheme; or two different keys.',
    headers: ['WWW-Authenticate'],
  },
  FORBIDDEN: {
    text: 'The credential is not an API key; the key lacks `read`; the plan is below Pro; or the organization usage ceiling is reached.',
    headers: [],
  },
  NOT_FOUND: {
    text: "No site of the key's organization matches `site`, or no such route.",
    headers: ['RateLimit-Policy?', 'RateLimit?'],
  },
  METHOD_NOT_ALLOWED: { text: 'The path exists but accepts only GET (and HEAD).', headers: ['Allow'] },
  REQUEST_TIMEOUT: { text: 'The request was not received in time.', headers: [] },
  URI_TOO_LONG: { text: 'The request URL is longer than the gateway accepts.', headers: [] },
  HEADERS_TOO_LARGE: {
    text: `The request headers are larger than the gateway accepts, or more than ${MAX_HEADER_LINES} lines, or repeat a header that may appear once (such as \`Host\` or \`User-Agent\`).`,
    headers: [],
  },
  RATE_LIMITED: {
    text:
      "The caller's own excess, never the gateway's: `request_limit_reached`, the organization's request limit is " +
      'used up for this window; `concurrency_share_exceeded`, the organization holds more calls to the data source ' +
      'than its share while others wait (see the concurrency rule); `unknown_key_budget_spent`, this address ' +
      'presented too many unknown keys this minute. Retry after `Retry-After`. `RateLimit-Policy` and `RateLimit` ' +
      'come with the first two: the third knows no organization.',
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
  INTERNAL: { text: 'An unexpected failure inside the gateway.', headers: [] },
  UPSTREAM_ERROR: {
    text: 'The data source failed to answer, and no recent answer was cached. Retry after `Retry-After`.',
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
  SERVICE_UNAVAILABLE: {
    text: "The gateway's own unavailability: authentication cannot be checked (`key_service_unavailable`), this instance is verifying more keys at once than it takes (`verification_busy`, its own throttling, not the key service's), usage cannot be counted for now (`usage_backlog`), the request limit cannot be enforced (`limiter_unavailable`), the data source refuses for now (`platform_busy`), or this instance is shutting down (`shutting_down`). Retry after the given delay.",
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
  UPSTREAM_TIMEOUT: {
    text: 'The data source did not answer in time, and no recent answer was cached. Retry after `Retry-After`.',
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
};

const requestIdText =
  "the caller's own X-Request-Id when it was well formed (1 to 128 of `A-Z a-z 0-9 . _ : -`, starting with a " +
  'letter or digit), else a new UUID.';

export const requestHeaderParameters: Record<string, ParameterObject> = {
  XRequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: `Your own id for this request, to follow it through; echoed back. A malformed one is replaced: ${requestIdText}`,
    schema: { type: 'string', pattern: REQUEST_ID_PATTERN.source },
  },
  IfNoneMatch: {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description: 'The ETag of an answer you hold: while it is still current the answer is 304 with no body.',
    schema: { type: 'string' },
  },
};

/** A response header whose values are strings of `schema`; only Age is sometimes absent from its answers. */
const header = (description: string, schema: SchemaObject, required = true): HeaderObject => ({
  description,
  ...(required ? { required } : {}),
  schema: { type: 'string', ...schema },
});

/** Response headers by their HTTP name; in the document's components the name without hyphens. */
export const responseHeaders: Record<string, HeaderObject> = {
  'X-Request-Id': header(`This answer's request id: ${requestIdText}`, { pattern: REQUEST_ID_PATTERN.source }),
  'RateLimit-Policy': header(
    "The request limit of the key's organization (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds.",
    { pattern: '^"[^"]+";q=\\d+;w=\\d+$' },
  ),
  RateLimit: header('What is left of the request limit: `r` requests remain; the window resets in `t` seconds.', {
    pattern: '^"[^"]+";r=\\d+;t=\\d+$',
  }),
  'Retry-After': header('Seconds to wait before retrying.', { pattern: '^[1-9][0-9]*$' }),
  ETag: header('Strong validator of the answer; send it back in If-None-Match to get 304 while it is unchanged.', {
    pattern: '^"[^"]*"$',
  }),
  'Cache-Control': header(
    'Answers are private to the organization and fresh for the gateway cache TTL (`private, max-age=30`); ' +
      '`no-store` when the gateway cache is off.',
    { pattern: '^(private, max-age=\\d+|no-store)$' },
  ),
  'Cache-Status': header(
    'RFC 9211, one entry for the gateway: `gateway; hit; ttl=<seconds left>` served from its cache; ' +
      "`gateway; fwd=miss` fetched now (`; collapsed` when it shared another request's fetch); " +
      '`gateway; fwd=stale; ttl=<negative>; detail=stale-if-error` a recent answer stands in because the data ' +
      'source failed; `gateway; fwd=bypass` the cache is off.',
    {
      pattern:
        '^gateway; (hit; ttl=-?\\d+|fwd=miss(; collapsed)?|fwd=stale; ttl=-?\\d+; detail=stale-if-error|fwd=bypass)$',
    },
  ),
  Age: header(
    'Seconds since the gateway fetched the answer; absent when fetched now or when the cache is off.',
    { pattern: '^\\d+$' },
    false,
  ),
  Vary: header(`Answers differ by key: \`${VARY}\`.`, { const: VARY }),
  'WWW-Authenticate': header('How to authenticate: `Bearer`.', { pattern: '^Bearer' }),
  Allow: header('The methods the path accepts.', { const: ALLOW }),
};
