import type { OpenAPIObject, OperationObject, ParameterObject, ResponseObject, SchemaObject } from 'openapi3-ts/oas31';
import { z } from 'zod';
import type { JSONSchema } from 'zod/v4/core';
import { type ErrorCode, STATUS_BY_CODE } from '../errors.js';
import { documentedSchemas } from '../routes/documentedSchemas.js';
import type { PublicRoute } from '../routes/publicRoute.js';
// Registers the failure envelope's schemas among the documented ones.
import './errorSchemas.js';
import { failureExamples, failureResponse, headerComponent, headerRefs, ref } from './failureResponses.js';
import { RECORDED_EXAMPLES } from './recordedExamples.js';
import { requestHeaderParameters, responseHeaders } from './responseHeaders.js';

/**
 * The OpenAPI 3.1 document, generated: schemas from the routes' zod declarations and
 * the error unions, one response per status the server can answer, examples recorded
 * from real answers over the demo data. Nothing in it is written twice by hand.
 */

const COMPONENT_SCHEMAS = '#/components/schemas/';

const SUCCESS_HEADERS = ['RateLimit-Policy', 'RateLimit', 'ETag', 'Cache-Control', 'Cache-Status', 'Age', 'Vary'];

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
  return asOpenApiSchema(
    z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'output', override: withoutSafeIntegerBounds }),
  );
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
      headers: Object.fromEntries(
        Object.entries(responseHeaders).map(([name, header]) => [headerComponent(name), header]),
      ),
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
  '**Unknown keys.** Each client address may present a limited number of keys that turn out unknown per minute; ' +
    'beyond it, keys never seen to succeed get 429 `unknown_key_budget_spent` with `Retry-After` (no ' +
    '`RateLimit` fields: no organization is known) before any key check. A key that has succeeded is never ' +
    'refused by it. Why: guessing keys must stay slow and cheap to refuse.',
  '',
  'A path that exists asked with a method other than GET or HEAD answers 405 with `Allow` (OPTIONS: 200 with ' +
    '`Allow`, and no CORS fields); an unknown path answers 404. None of these needs a key.',
].join('\n');
