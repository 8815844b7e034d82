import type {
  ExampleObject,
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import { z } from 'zod';
import type { JSONSchema } from 'zod/v4/core';
import { reasonsOf, STATUS_BY_CODE, type ErrorCode } from '../errors.js';
import { documentedSchemas } from '../routes/documentedSchemas.js';
import type { PublicRoute } from '../routes/publicRoute.js';
// Registers the failure envelope's schemas among the documented ones.
import './errorSchemas.js';
import { RECORDED_EXAMPLES } from './recordedExamples.js';
import { requestHeaderParameters, responseHeaders } from './responseHeaders.js';

/**
 * The OpenAPI 3.1 document, generated: schemas from the routes' zod declarations and
 * the error unions, one response per status the server can answer, examples recorded
 * from real answers over the demo data. Nothing in it is written twice by hand.
 */

const ref = (kind: string, name: string): ReferenceObject => ({ $ref: `#/components/${kind}/${name}` });
const COMPONENT_SCHEMAS = '#/components/schemas/';

/** What each failure means to a consumer, and the headers it carries besides X-Request-Id. */
const FAILURES: Readonly<Record<ErrorCode, { readonly text: string; readonly headers: readonly string[] }>> = {
  BAD_REQUEST: {
    text: '`site` is missing, blank, repeated, too long, or matches more than one site (retry with the exact domain); or the request could not be read.',
    headers: ['RateLimitPolicy?', 'RateLimit?'],
  },
  UNAUTHORIZED: {
    text: 'The API key is missing, malformed, unknown or expired; a key was put in the URL (use a header and rotate that key); an unsupported scheme; or two different keys.',
    headers: ['WWWAuthenticate'],
  },
  FORBIDDEN: {
    text: 'The credential is not an API key; the key lacks `read`; the plan is below Pro; or the organization usage ceiling is reached.',
    headers: [],
  },
  NOT_FOUND: { text: "No site of the key's organization matches `site`, or no such route.", headers: ['RateLimitPolicy?', 'RateLimit?'] },
  METHOD_NOT_ALLOWED: { text: 'The path exists but accepts only GET (and HEAD).', headers: ['Allow'] },
  REQUEST_TIMEOUT: { text: 'The request was not received in time.', headers: [] },
  URI_TOO_LONG: { text: 'The request URL is longer than the gateway accepts.', headers: [] },
  HEADERS_TOO_LARGE: { text: 'The request headers are larger than the gateway accepts.', headers: [] },
  RATE_LIMITED: { text: "The organization's request limit is used up for this window.", headers: ['RetryAfter', 'RateLimitPolicy', 'RateLimit'] },
  INTERNAL: { text: 'An unexpected failure inside the gateway.', headers: [] },
  UPSTREAM_ERROR: { text: 'The data source failed to answer, and no recent answer was cached.', headers: ['RateLimitPolicy?', 'RateLimit?'] },
  SERVICE_UNAVAILABLE: {
    text: 'Temporarily unavailable: authentication cannot be checked, the request limit cannot be enforced, or the data source is busy. Retry after the given delay.',
    headers: ['RetryAfter', 'RateLimitPolicy?', 'RateLimit?'],
  },
  UPSTREAM_TIMEOUT: { text: 'The data source did not answer in time.', headers: ['RateLimitPolicy?', 'RateLimit?'] },
};

const HEADER_NAMES: Readonly<Record<string, string>> = {
  XRequestId: 'X-Request-Id',
  RateLimitPolicy: 'RateLimit-Policy',
  RateLimit: 'RateLimit',
  RetryAfter: 'Retry-After',
  ETag: 'ETag',
  CacheControl: 'Cache-Control',
  CacheStatus: 'Cache-Status',
  Age: 'Age',
  Vary: 'Vary',
  WWWAuthenticate: 'WWW-Authenticate',
  Allow: 'Allow',
};

/** Header references by component name; a trailing `?` marks one that only some answers of the status carry. */
function headerRefs(names: readonly string[]): ResponseObject['headers'] {
  const headers: NonNullable<ResponseObject['headers']> = {};
  for (const entry of ['XRequestId', ...names]) {
    const optional = entry.endsWith('?');
    const name = optional ? entry.slice(0, -1) : entry;
    const component = responseHeaders[name];
    if (component === undefined) throw new Error(`no header component ${name}`);
    headers[HEADER_NAMES[name] ?? name] = optional ? { ...component, required: false } : ref('headers', name);
  }
  return headers;
}

function failureResponse(code: ErrorCode): ResponseObject {
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
        ...(examples.length > 0 ? { examples: Object.fromEntries(examples.map((name) => [name, ref('examples', name)])) } : {}),
      },
    },
  };
}

const SUCCESS_HEADERS = ['RateLimitPolicy', 'RateLimit', 'ETag', 'CacheControl', 'CacheStatus', 'Age', 'Vary'];

function operation(route: PublicRoute): OperationObject {
  const recorded = RECORDED_EXAMPLES.success[route.operationId] ?? {};
  const responses: Record<string, ResponseObject> = {
    '200': {
      description: route.summary,
      headers: headerRefs(SUCCESS_HEADERS),
      content: {
        'application/json': {
          schema: { $ref: `${COMPONENT_SCHEMAS}${envelopeId(route)}` },
          examples: Object.fromEntries(Object.entries(recorded).map(([name, value]) => [name, { value }])),
        },
      },
    },
    '304': {
      description: 'Not Modified: If-None-Match named the current ETag. No body; counts as a successful call.',
      headers: headerRefs(SUCCESS_HEADERS),
    },
  };
  for (const [code, status] of Object.entries(STATUS_BY_CODE) as Array<[ErrorCode, number]>) {
    responses[String(status)] = failureResponse(code);
  }
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: ['v1'],
    security: [{ bearerApiKey: [] }, { headerApiKey: [] }],
    parameters: [...queryParameters(route), ref('parameters', 'XRequestId'), ref('parameters', 'IfNoneMatch')],
    responses,
  };
}

function envelopeId(route: PublicRoute): string {
  const id = documentedSchemas.get(route.envelope)?.id;
  if (id === undefined) throw new Error(`the envelope of ${route.path} is not registered`);
  return id;
}

/**
 * One query parameter per field of the route's zod query, as the parsed value reads
 * (after the lenient rules). Its example is the value a recorded answer echoes, if any.
 */
function queryParameters(route: PublicRoute): ParameterObject[] {
  const query = toSchema(route.query);
  const echoed = recordedData(route);
  return Object.entries(query.properties ?? {}).map(([name, property]) => {
    if ('$ref' in property) throw new Error(`query parameter ${name} of ${route.path} is a reference`);
    const { description, ...rest } = property;
    const example = echoed[name];
    return {
      name,
      in: 'query',
      required: rest.default === undefined,
      description: typeof description === 'string' ? description : name,
      schema: rest,
      ...(typeof example === 'string' || typeof example === 'number' ? { example } : {}),
    };
  });
}

/** The `data` of the route's first recorded success answer. */
function recordedData(route: PublicRoute): Readonly<Record<string, unknown>> {
  const [first] = Object.values(RECORDED_EXAMPLES.success[route.operationId] ?? {});
  const data = typeof first === 'object' && first !== null && 'data' in first ? first.data : null;
  return typeof data === 'object' && data !== null ? { ...data } : {};
}

function toSchema(schema: z.ZodType): SchemaObject {
  return asOpenApiSchema(z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', override: withoutSafeIntegerBounds }));
}

/**
 * An OpenAPI 3.1 schema object is a JSON Schema 2020-12 schema, which is what zod
 * emits; the two libraries' types differ only in how they spell boolean subschemas.
 */
function asOpenApiSchema(schema: JSONSchema.BaseSchema): SchemaObject {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest as SchemaObject;
}

/** zod states the safe-integer range of every int; the document says only what the API promises. */
function withoutSafeIntegerBounds(context: { jsonSchema: { minimum?: number; maximum?: number } }): void {
  const schema = context.jsonSchema;
  if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
  if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
}

function componentSchemas(): Record<string, SchemaObject> {
  const { schemas } = z.toJSONSchema(documentedSchemas, {
    target: 'draft-2020-12',
    io: 'output',
    uri: (id) => `${COMPONENT_SCHEMAS}${id}`,
    override: withoutSafeIntegerBounds,
  });
  return Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, asOpenApiSchema(schema)]));
}

/** The recorded failures, one named example each, shared by every operation. */
function failureExamples(): Record<string, ExampleObject> {
  return Object.fromEntries(
    Object.values(RECORDED_EXAMPLES.failures).flatMap((byName) =>
      Object.entries(byName).map(([name, value]) => [name, { summary: name.replaceAll('_', ' '), value }]),
    ),
  );
}

export interface DocumentOptions {
  /** Where consumers reach the gateway; absent: `/`, the origin the document was loaded from. */
  readonly publicBaseUrl?: string | undefined;
}

export function buildOpenApiDocument(routes: readonly PublicRoute[], options: DocumentOptions = {}): OpenAPIObject {
  return {
    openapi: '3.1.0',
    info: {
      title: 'SEO platform public REST API',
      version: '1.0.0',
      description: DESCRIPTION,
      contact: {
        name: 'SEO platform API support',
        ...(options.publicBaseUrl === undefined ? {} : { url: `${options.publicBaseUrl}/docs` }),
      },
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: options.publicBaseUrl ?? '/', description: 'This gateway' }],
    tags: [{ name: 'v1', description: 'The four public read-only routes.' }],
    paths: Object.fromEntries(routes.map((route) => [route.path, { get: operation(route) }])),
    components: {
      schemas: componentSchemas(),
      parameters: requestHeaderParameters,
      headers: responseHeaders,
      examples: failureExamples(),
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
}

const DESCRIPTION = [
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
].join('\n');
