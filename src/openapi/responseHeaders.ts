import type { HeaderObject, ParameterObject } from 'openapi3-ts/oas31';
import { REQUEST_ID_PATTERN } from '../http/requestId.js';
import { CALLER_VARY as VARY } from '../http/securityHeaders.js';
import { ALLOW } from '../http/unmatchedPaths.js';

/**
 * The headers of the document: what requests may send and what answers carry.
 * Patterns are those of the values the gateway writes.
 */

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

/** By their HTTP name; in the document's components the name without hyphens. */
export const responseHeaders: Record<string, HeaderObject> = {
  'X-Request-Id': {
    description: `This answer's request id: ${requestIdText}`,
    required: true,
    schema: { type: 'string', pattern: REQUEST_ID_PATTERN.source },
  },
  'RateLimit-Policy': {
    description:
      "The request limit of the key's organization (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds.",
    required: true,
    schema: { type: 'string', pattern: '^"[^"]+";q=\\d+;w=\\d+$' },
  },
  RateLimit: {
    description: 'What is left of the request limit: `r` requests remain; the window resets in `t` seconds.',
    required: true,
    schema: { type: 'string', pattern: '^"[^"]+";r=\\d+;t=\\d+$' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'string', pattern: '^[1-9][0-9]*$' },
  },
  ETag: {
    description: 'Strong validator of the answer; send it back in If-None-Match to get 304 while it is unchanged.',
    required: true,
    schema: { type: 'string', pattern: '^"[^"]*"$' },
  },
  'Cache-Control': {
    description:
      'Answers are private to the organization and fresh for the gateway cache TTL (`private, max-age=30`); ' +
      '`no-store` when the gateway cache is off.',
    required: true,
    schema: { type: 'string', pattern: '^(private, max-age=\\d+|no-store)$' },
  },
  'Cache-Status': {
    description:
      'RFC 9211, one entry for the gateway: `gateway; hit; ttl=<seconds left>` served from its cache; ' +
      "`gateway; fwd=miss` fetched now (`; collapsed` when it shared another request's fetch); " +
      '`gateway; fwd=stale; ttl=<negative>; detail=stale-if-error` a recent answer stands in because the data ' +
      'source failed; `gateway; fwd=bypass` the cache is off.',
    required: true,
    schema: {
      type: 'string',
      pattern:
        '^gateway; (hit; ttl=-?\\d+|fwd=miss(; collapsed)?|fwd=stale; ttl=-?\\d+; detail=stale-if-error|fwd=bypass)$',
    },
  },
  Age: {
    description: 'Seconds since the gateway fetched the answer; absent when fetched now or when the cache is off.',
    schema: { type: 'string', pattern: '^\\d+$' },
  },
  Vary: {
    description: `Answers differ by key: \`${VARY}\`.`,
    required: true,
    schema: { type: 'string', const: VARY },
  },
  'WWW-Authenticate': {
    description: 'How to authenticate: `Bearer`.',
    required: true,
    schema: { type: 'string', pattern: '^Bearer' },
  },
  Allow: {
    description: 'The methods the path accepts.',
    required: true,
    schema: { type: 'string', const: ALLOW },
  },
};
