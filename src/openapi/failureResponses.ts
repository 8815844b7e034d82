import type { ExampleObject, ReferenceObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas31';
import { type ErrorCode, reasonsOf, STATUS_BY_CODE } from '../errors.js';
import { RECORDED_EXAMPLES } from './recordedExamples.js';
import { responseHeaders } from './responseHeaders.js';

/**
 * The document's failure responses: one per code, each the ErrorEnvelope narrowed to
 * that code and its reasons, with the headers that failure carries and the recorded
 * real answers of its status as examples.
 */

/** A reference to a component of the document. */
export const ref = (kind: string, name: string): ReferenceObject => ({ $ref: `#/components/${kind}/${name}` });

/** What each failure means to a consumer, and the headers it carries besides X-Request-Id. */
const FAILURES: Readonly<Record<ErrorCode, { readonly text: string; readonly headers: readonly string[] }>> = {
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
  HEADERS_TOO_LARGE: { text: 'The request headers are larger than the gateway accepts.', headers: [] },
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
    text: "The gateway's own unavailability: authentication cannot be checked (`key_service_unavailable`), the request limit cannot be enforced (`limiter_unavailable`), the data source refuses for now (`platform_busy`), or this instance is shutting down (`shutting_down`). Retry after the given delay.",
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
  UPSTREAM_TIMEOUT: {
    text: 'The data source did not answer in time, and no recent answer was cached. Retry after `Retry-After`.',
    headers: ['Retry-After', 'RateLimit-Policy?', 'RateLimit?'],
  },
};

/** The name of a response header among the document's components. */
export const headerComponent = (name: string): string => name.replaceAll('-', '');

/** X-Request-Id and the named headers; a trailing `?` marks one that only some answers of the status carry. */
export function headerRefs(names: readonly string[]): ResponseObject['headers'] {
  const headers: NonNullable<ResponseObject['headers']> = {};
  for (const entry of ['X-Request-Id', ...names]) {
    const optional = entry.endsWith('?');
    const name = optional ? entry.slice(0, -1) : entry;
    const component = responseHeaders[name];
    if (component === undefined) throw new Error(`no response header ${name}`);
    headers[name] = optional ? { ...component, required: false } : ref('headers', headerComponent(name));
  }
  return headers;
}

export function failureResponse(code: ErrorCode): ResponseObject {
  const reasons = reasonsOf(code);
  const narrowing: SchemaObject = {
    type: 'object',
    properties: {
      errors: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            code: { const: code },
            // Listed again so validators that close every object schema still accept it.
            message: { type: 'string' },
            ...(reasons.length > 0 ? { reason: { type: 'string', enum: reasons } } : {}),
          },
        },
      },
    },
  };
  const { text, headers } = FAILURES[code];
  const examples = Object.keys(RECORDED_EXAMPLES.failures[String(STATUS_BY_CODE[code])] ?? {});
  return {
    description: text,
    headers: headerRefs(headers),
    content: {
      'application/json': {
        schema: { allOf: [ref('schemas', 'ErrorEnvelope'), narrowing] },
        ...(examples.length > 0
          ? { examples: Object.fromEntries(examples.map((name) => [name, ref('examples', name)])) }
          : {}),
      },
    },
  };
}

/** The recorded failures, one named example each, shared by every operation. */
export function failureExamples(): Record<string, ExampleObject> {
  return Object.fromEntries(
    Object.values(RECORDED_EXAMPLES.failures).flatMap((byName) =>
      Object.entries(byName).map(([name, value]) => [name, { summary: name.replaceAll('_', ' '), value }]),
    ),
  );
}
