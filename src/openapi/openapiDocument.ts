import type { ErrorCode } from '../errors.js';
import type {
  HeaderObject,
  JsonSchema,
  OpenApiDocument,
  OperationObject,
  ParameterObject,
  Reference,
  ResponseObject,
} from './openapiTypes.js';

/**
 * The OpenAPI 3.1 description of the public v1 surface: the four routes, their
 * parameters and limits, every payload, the error envelope, every status each route
 * can answer, the two ways to present a key, and the response headers. Payload
 * schemas are closed (additionalProperties: false) so the conformance test fails
 * the moment an answer and this document drift apart.
 */

const schema = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const header = (name: string): Reference => ({ $ref: `#/components/headers/${name}` });
const response = (name: string): Reference => ({ $ref: `#/components/responses/${name}` });
const parameter = (name: string): Reference => ({ $ref: `#/components/parameters/${name}` });
const nullable = (type: 'string' | 'integer' | 'number', extra: JsonSchema = {}): JsonSchema => ({
  type: [type, 'null'],
  ...extra,
});

/** Parameter limits, as the spec (section 8) states them. */
export const PARAMETER_LIMITS = {
  rankingsDays: { default: 7, maximum: 90 },
  rankingsLimit: { default: 10, maximum: 100 },
  keywordsLimit: { default: 50, maximum: 500 },
} as const;

const LENIENT =
  'Only a plain positive whole number of decimal digits is read; any other value (0, negative, fractional, ' +
  'non-numeric, empty or repeated) means the default, and a value above the maximum means the maximum. ' +
  'An invalid value is never an error.';

function positiveIntParameter(name: string, what: string, limits: { default: number; maximum: number }): ParameterObject {
  return {
    name,
    in: 'query',
    required: false,
    description: `${what} Default ${limits.default}, maximum ${limits.maximum}. ${LENIENT}`,
    schema: { type: 'integer', minimum: 1, maximum: limits.maximum, default: limits.default },
  };
}

// ---------------------------------------------------------------- payloads

const successEnvelope = (data: JsonSchema, description: string): JsonSchema => ({
  type: 'object',
  description,
  additionalProperties: false,
  required: ['data', 'meta', 'errors'],
  properties: {
    data,
    meta: { type: 'object', maxProperties: 0, description: 'Always an empty object on success.' },
    errors: { type: 'array', maxItems: 0, items: schema('ErrorEntry'), description: 'Always empty on success.' },
  },
});

const setupRequired = (reason: string, description: string): JsonSchema => ({
  type: 'object',
  description,
  additionalProperties: false,
  required: ['site', 'setup_required', 'reason'],
  properties: {
    site: schema('SiteEcho'),
    setup_required: { const: true },
    reason: { const: reason },
  },
});

const UTC_TIMESTAMP: JsonSchema = {
  type: 'string',
  format: 'date-time',
  pattern: 'Z$',
  description: 'ISO 8601 UTC timestamp, ending in Z.',
};

const schemas: Record<string, JsonSchema> = {
  SiteEcho: {
    type: 'string',
    minLength: 1,
    description: 'The `site` parameter as given, trimmed.',
  },
  Mover: {
    type: 'object',
    additionalProperties: false,
    required: ['keyword', 'from', 'to', 'delta'],
    properties: {
      keyword: { type: 'string' },
      from: nullable('integer', { minimum: 1, description: 'Position at the start of the window; null if unranked then.' }),
      to: nullable('integer', { minimum: 1, description: 'Newest position; null if unranked now.' }),
      delta: nullable('integer', {
        description: '`from` minus `to`: positive means the keyword moved up. Null when either side is null.',
      }),
    },
  },
  RankingsPayload: {
    type: 'object',
    additionalProperties: false,
    required: ['site', 'days', 'movers'],
    properties: {
      site: schema('SiteEcho'),
      days: { type: 'integer', minimum: 1, maximum: PARAMETER_LIMITS.rankingsDays.maximum, description: 'The window used.' },
      movers: {
        type: 'array',
        maxItems: PARAMETER_LIMITS.rankingsLimit.maximum,
        items: schema('Mover'),
        description:
          'Keywords whose position changed, largest move first (an unranked side counts as 101 for ordering only); ' +
          'ties by keyword text.',
      },
    },
  },
  AiVisibilityPayload: {
    type: 'object',
    additionalProperties: false,
    required: ['site', 'ai_visibility'],
    properties: {
      site: schema('SiteEcho'),
      ai_visibility: {
        type: 'object',
        additionalProperties: false,
        required: ['score', 'activePrompts', 'pausedPrompts', 'summary'],
        properties: {
          score: nullable('number', {
            minimum: 0,
            maximum: 1,
            description: 'Newest 30-day visibility score as a fraction; null until the first rollup exists.',
          }),
          activePrompts: { type: 'integer', minimum: 0 },
          pausedPrompts: { type: 'integer', minimum: 0 },
          summary: {
            type: 'object',
            additionalProperties: false,
            required: ['appearanceRate', 'shareOfVoice', 'computedAt'],
            properties: {
              appearanceRate: nullable('number', { minimum: 0, maximum: 1 }),
              shareOfVoice: nullable('number', { minimum: 0, maximum: 1 }),
              computedAt: { ...UTC_TIMESTAMP, type: ['string', 'null'] },
            },
          },
        },
      },
    },
  },
  AiVisibilitySetupRequired: setupRequired('no_ai_visibility', 'The site has no AI visibility program yet.'),
  Keyword: {
    type: 'object',
    additionalProperties: false,
    required: ['keyword', 'position', 'unranked', 'volume', 'clusterLabel'],
    properties: {
      keyword: { type: 'string' },
      position: nullable('integer', { minimum: 1 }),
      unranked: { type: 'boolean', description: 'True when the keyword has no ranking (position null).' },
      volume: nullable('integer', { minimum: 0, description: 'Monthly search volume.' }),
      clusterLabel: nullable('string'),
    },
  },
  KeywordsPayload: {
    type: 'object',
    additionalProperties: false,
    required: ['site', 'keywords'],
    properties: {
      site: schema('SiteEcho'),
      keywords: {
        type: 'array',
        maxItems: PARAMETER_LIMITS.keywordsLimit.maximum,
        items: schema('Keyword'),
        description: 'Best position first (ties by keyword text), then unranked keywords by text.',
      },
    },
  },
  AuditPayload: {
    type: 'object',
    additionalProperties: false,
    required: ['site', 'audit'],
    properties: {
      site: schema('SiteEcho'),
      audit: {
        type: 'object',
        additionalProperties: false,
        required: ['latestRun', 'issueCounts'],
        properties: {
          latestRun: {
            type: 'object',
            additionalProperties: false,
            required: ['id', 'completedAt', 'scores'],
            properties: {
              id: { type: 'string', format: 'uuid' },
              completedAt: UTC_TIMESTAMP,
              scores: {
                type: 'object',
                additionalProperties: false,
                required: ['overall', 'aiCrawl', 'decay', 'technical'],
                properties: {
                  overall: nullable('number', { minimum: 0, maximum: 100 }),
                  aiCrawl: nullable('number', { minimum: 0, maximum: 100 }),
                  decay: nullable('number', { minimum: 0, maximum: 100 }),
                  technical: nullable('number', { minimum: 0, maximum: 100 }),
                },
              },
            },
          },
          issueCounts: {
            type: 'object',
            additionalProperties: false,
            required: ['critical', 'warn', 'info'],
            properties: {
              critical: { type: 'integer', minimum: 0 },
              warn: { type: 'integer', minimum: 0 },
              info: { type: 'integer', minimum: 0 },
            },
          },
        },
      },
    },
  },
  AuditSetupRequired: setupRequired('no_audit', 'No audit of the site has completed yet.'),
  RankingsEnvelope: successEnvelope(schema('RankingsPayload'), 'The rankings answer.'),
  AiVisibilityEnvelope: successEnvelope(
    { oneOf: [schema('AiVisibilityPayload'), schema('AiVisibilitySetupRequired')] },
    'The AI visibility answer, or the setup-required form.',
  ),
  KeywordsEnvelope: successEnvelope(schema('KeywordsPayload'), 'The keywords answer.'),
  AuditEnvelope: successEnvelope(
    { oneOf: [schema('AuditPayload'), schema('AuditSetupRequired')] },
    'The audit answer, or the setup-required form.',
  ),
  ErrorEntry: {
    type: 'object',
    additionalProperties: false,
    required: ['code', 'message'],
    properties: {
      code: { type: 'string', enum: errorCodes() },
      message: { type: 'string', minLength: 1, description: 'For people; may change. Never holds upstream details.' },
      reason: {
        type: 'string',
        pattern: '^[a-z][a-z0-9_]*$',
        description:
          'A stable, machine-readable refinement of the code, e.g. missing_key, malformed_key, invalid_key, ' +
          'expired_key, key_in_url, not_an_api_key, missing_permission, plan_not_eligible, usage_ceiling_reached, ' +
          'site_missing, site_repeated, site_ambiguous, site_not_found, route_not_found, key_service_unavailable.',
      },
    },
  },
  ErrorMeta: {
    type: 'object',
    additionalProperties: false,
    properties: {
      requestId: { type: 'string', description: 'The X-Request-Id of this answer: quote it when reporting a problem.' },
    },
  },
  ErrorEnvelope: errorEnvelope(errorCodes(), 'Every failure: `data` null and at least one error.'),
};

function errorCodes(): ErrorCode[] {
  // Listed by hand so the document states them; the conformance test checks each one seen.
  return [
    'BAD_REQUEST',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'NOT_FOUND',
    'METHOD_NOT_ALLOWED',
    'URI_TOO_LONG',
    'HEADERS_TOO_LARGE',
    'RATE_LIMITED',
    'INTERNAL',
    'UPSTREAM_ERROR',
    'SERVICE_UNAVAILABLE',
    'UPSTREAM_TIMEOUT',
  ];
}

/** The failure envelope, narrowed to the code(s) a given status carries. */
function errorEnvelope(codes: ErrorCode[], description: string): JsonSchema {
  return {
    type: 'object',
    description,
    additionalProperties: false,
    required: ['data', 'meta', 'errors'],
    properties: {
      data: { type: 'null' },
      meta: schema('ErrorMeta'),
      errors: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['code', 'message'],
          properties: {
            code: codes.length === 1 ? { const: codes[0] } : { type: 'string', enum: codes },
            message: { type: 'string', minLength: 1 },
            reason: { type: 'string', pattern: '^[a-z][a-z0-9_]*$' },
          },
        },
      },
    },
  };
}

// ---------------------------------------------------------------- headers

const rateLimitPolicyHeader: HeaderObject = {
  description:
    "The request limit of the key's organization (draft-ietf-httpapi-ratelimit-headers): `q` requests per `w` seconds.",
  schema: { type: 'string', pattern: '^"[^"]+";q=\\d+;w=\\d+$', examples: ['"per-organization";q=600;w=60'] },
};

const rateLimitHeader: HeaderObject = {
  description: 'What is left of the request limit: `r` requests remain; the window resets in `t` seconds.',
  schema: { type: 'string', pattern: '^"[^"]+";r=\\d+;t=\\d+$', examples: ['"per-organization";r=599;t=60'] },
};

const headers: Record<string, HeaderObject> = {
  XRequestId: {
    description:
      "This answer's request id: the caller's own X-Request-Id when it was well formed (1 to 128 of " +
      '`A-Z a-z 0-9 . _ : -`, starting with a letter or digit), else a new UUID.',
    required: true,
    schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$' },
  },
  RateLimitPolicy: rateLimitPolicyHeader,
  RateLimit: rateLimitHeader,
  RetryAfter: {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'string', pattern: '^[1-9][0-9]*$', examples: ['5'] },
  },
  ETag: {
    description: 'Strong validator of the answer; send it back in If-None-Match to get 304 while it is unchanged.',
    schema: { type: 'string', pattern: '^"[^"]*"$' },
  },
  CacheControl: {
    description: 'Answers are private to the organization and fresh for the gateway cache TTL, e.g. `private, max-age=30`.',
    schema: { type: 'string' },
  },
  CacheStatus: {
    description:
      'RFC 9211: whether the gateway served the answer from its cache (hit), fetched it (miss), or served a ' +
      'recent cached answer because the platform failed (stale).',
    schema: { type: 'string' },
  },
  Vary: {
    description: 'Answers differ by key: `Authorization, X-API-Key`.',
    schema: { type: 'string' },
  },
  WWWAuthenticate: {
    description: 'How to authenticate: `Bearer`.',
    required: true,
    schema: { type: 'string', pattern: '^Bearer' },
  },
  Allow: {
    description: 'The methods the path accepts.',
    required: true,
    schema: { type: 'string', examples: ['GET, HEAD'] },
  },
};

const rateLimitHeaders = { 'RateLimit-Policy': header('RateLimitPolicy'), RateLimit: header('RateLimit') };
const requestIdHeader = { 'X-Request-Id': header('XRequestId') };

// ---------------------------------------------------------------- responses

function failure(description: string, codes: ErrorCode[], extraHeaders: ResponseObject['headers'] = {}): ResponseObject {
  return {
    description,
    headers: { ...requestIdHeader, ...extraHeaders },
    content: { 'application/json': { schema: errorEnvelope(codes, description) } },
  };
}

const responses: Record<string, ResponseObject> = {
  NotModified: {
    description: 'Not Modified: If-None-Match named the current ETag. No body; counts as a successful call.',
    headers: {
      ...requestIdHeader,
      ...rateLimitHeaders,
      ETag: header('ETag'),
      'Cache-Control': header('CacheControl'),
      'Cache-Status': header('CacheStatus'),
      Vary: header('Vary'),
    },
  },
  BadRequest: failure(
    '`site` is missing, blank, given more than once, or matches more than one site (retry with the exact domain); ' +
      'or the request could not be read.',
    ['BAD_REQUEST'],
    rateLimitHeaders,
  ),
  Unauthorized: failure(
    'The API key is missing, malformed, unknown, expired or revoked; or a key was put in the URL (use a header, ' +
      'and rotate that key); or Authorization and X-API-Key disagree.',
    ['UNAUTHORIZED'],
    { 'WWW-Authenticate': header('WWWAuthenticate') },
  ),
  Forbidden: failure(
    'The credential is not an API key (e.g. a browser session token); the key lacks `read`; the plan is below ' +
      'Pro; or the organization usage ceiling is reached.',
    ['FORBIDDEN'],
  ),
  NotFound: failure(
    "No site of the key's organization matches `site` (another organization's site looks the same).",
    ['NOT_FOUND'],
    rateLimitHeaders,
  ),
  MethodNotAllowed: failure('The path exists but accepts only GET (and HEAD).', ['METHOD_NOT_ALLOWED'], {
    Allow: header('Allow'),
  }),
  UriTooLong: failure('The request URL is longer than 8 KiB.', ['URI_TOO_LONG']),
  HeadersTooLarge: failure('The request headers are larger than the gateway accepts.', ['HEADERS_TOO_LARGE']),
  RateLimited: failure("The organization's request limit is used up for this window.", ['RATE_LIMITED'], {
    'Retry-After': header('RetryAfter'),
    ...rateLimitHeaders,
  }),
  Internal: failure('An unexpected failure inside the gateway.', ['INTERNAL']),
  UpstreamError: failure('The data source failed to answer, and no recent answer was cached.', ['UPSTREAM_ERROR'], rateLimitHeaders),
  ServiceUnavailable: failure(
    'Temporarily unavailable: the request limit cannot be enforced, authentication cannot be checked, or the ' +
      'data source is busy. Retry after the given delay.',
    ['SERVICE_UNAVAILABLE'],
    { 'Retry-After': header('RetryAfter'), ...rateLimitHeaders },
  ),
  UpstreamTimeout: failure('The data source did not answer in time.', ['UPSTREAM_TIMEOUT'], rateLimitHeaders),
};

function successResponse(envelope: string, description: string): ResponseObject {
  return {
    description,
    headers: {
      ...requestIdHeader,
      // Every answer that passed the limiter carries both fields.
      'RateLimit-Policy': { ...rateLimitPolicyHeader, required: true },
      RateLimit: { ...rateLimitHeader, required: true },
      ETag: header('ETag'),
      'Cache-Control': header('CacheControl'),
      'Cache-Status': header('CacheStatus'),
      Vary: header('Vary'),
    },
    content: { 'application/json': { schema: schema(envelope) } },
  };
}

/** Every status a public route can answer besides 200. */
const commonResponses: Record<string, Reference> = {
  '304': response('NotModified'),
  '400': response('BadRequest'),
  '401': response('Unauthorized'),
  '403': response('Forbidden'),
  '404': response('NotFound'),
  '414': response('UriTooLong'),
  '429': response('RateLimited'),
  '431': response('HeadersTooLarge'),
  '500': response('Internal'),
  '502': response('UpstreamError'),
  '503': response('ServiceUnavailable'),
  '504': response('UpstreamTimeout'),
};

// Either scheme alone is enough.
const KEY_SECURITY: Array<Record<string, string[]>> = [{ bearerApiKey: [] }, { headerApiKey: [] }];

function publicOperation(
  operationId: string,
  summary: string,
  description: string,
  parameters: Reference[],
  ok: ResponseObject,
): OperationObject {
  return {
    operationId,
    summary,
    description,
    tags: ['v1'],
    security: KEY_SECURITY,
    parameters: [parameter('site'), ...parameters],
    responses: { '200': ok, ...commonResponses },
  };
}

export const openApiDocument: OpenApiDocument = {
  openapi: '3.1.0',
  info: {
    title: 'SEO platform public REST API',
    version: '1.0.0',
    description: [
      'Read-only data about a tracked site: keyword rankings, AI visibility, tracked keywords and the latest audit summary.',
      '',
      'Every request carries an organization API key (`atl_…`), preferably as `Authorization: Bearer <key>`, ' +
        'or as `X-API-Key: <key>`. Never put a key in a URL: such a request is refused and the key should be rotated.',
      '',
      'Every answer is JSON in the envelope `{ data, meta, errors }`. A failure has `data: null`, ' +
        '`meta.requestId`, and `errors: [{ code, message, reason? }]`. Every answer carries `X-Request-Id`; ' +
        'send your own (1 to 128 of `A-Z a-z 0-9 . _ : -`) to follow a request through.',
      '',
      'Answers to authenticated requests carry `RateLimit-Policy` and `RateLimit`; beyond the limit the answer is ' +
        '429 with `Retry-After`. Each successful call (200 or 304) counts toward usage.',
      '',
      'A path that exists asked with a method other than GET or HEAD answers 405 with `Allow`; an unknown path ' +
        'answers 404. Both need no key.',
    ].join('\n'),
  },
  servers: [{ url: '/', description: 'This gateway' }],
  tags: [{ name: 'v1', description: 'The four public read-only routes.' }],
  paths: {
    '/v1/api/rankings': {
      get: publicOperation(
        'getRankings',
        'Keywords whose rankings moved most',
        'Compares the newest rank check with the newest one on or before `days` days ago (UTC) and lists the ' +
          'keywords whose position changed, largest move first.',
        [parameter('days'), parameter('rankingsLimit')],
        successResponse('RankingsEnvelope', 'The movers over the window.'),
      ),
    },
    '/v1/api/ai-visibility/summary': {
      get: publicOperation(
        'getAiVisibilitySummary',
        'AI visibility summary',
        'The newest 30-day AI visibility rollup and tracked-prompt counts. A site without an AI visibility program ' +
          'answers 200 with `{ site, setup_required: true, reason: "no_ai_visibility" }`.',
        [],
        successResponse('AiVisibilityEnvelope', 'The summary, or the setup-required form.'),
      ),
    },
    '/v1/api/keywords': {
      get: publicOperation(
        'getKeywords',
        'Tracked keywords, best ranked first',
        'Tracked keywords by newest position (ties by keyword text), then unranked keywords by text.',
        [parameter('keywordsLimit')],
        successResponse('KeywordsEnvelope', 'The first `limit` tracked keywords.'),
      ),
    },
    '/v1/api/audit-issues': {
      get: publicOperation(
        'getAuditIssues',
        'Latest completed audit: scores and issue counts',
        'Scores and issue counts of the newest completed audit (never individual issue rows). Without a completed ' +
          'audit the answer is 200 with `{ site, setup_required: true, reason: "no_audit" }`.',
        [],
        successResponse('AuditEnvelope', 'The audit summary, or the setup-required form.'),
      ),
    },
  },
  components: {
    schemas,
    parameters: {
      site: {
        name: 'site',
        in: 'query',
        required: true,
        description:
          "The site's exact domain or its slug, given once. Missing, blank or repeated → 400; no match in your " +
          'organization → 404; a slug shared by several sites → 400 (retry with the exact domain).',
        schema: { type: 'string', minLength: 1, examples: ['example.com'] },
      },
      days: positiveIntParameter('days', 'The trailing window in days.', PARAMETER_LIMITS.rankingsDays),
      rankingsLimit: positiveIntParameter('limit', 'How many movers to list at most.', PARAMETER_LIMITS.rankingsLimit),
      keywordsLimit: positiveIntParameter('limit', 'How many keywords to list at most.', PARAMETER_LIMITS.keywordsLimit),
    },
    headers,
    responses,
    securitySchemes: {
      bearerApiKey: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'API key (atl_…)',
        description: 'The recommended form: `Authorization: Bearer <API_KEY>`.',
      },
      headerApiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'X-API-Key',
        description: 'Also accepted: `X-API-Key: <API_KEY>`. Sending both with different values is refused.',
      },
    },
  },
};

/** Serialized once: the document never changes while the process runs. */
export const openApiJson = JSON.stringify(openApiDocument);
