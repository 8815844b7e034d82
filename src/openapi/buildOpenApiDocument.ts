import type {
  OpenAPIObject,
  OperationObject,
  ParameterObject,
  ReferenceObject,
  ResponseObject,
  SchemaObject,
} from 'openapi3-ts/oas31';
import { z } from 'zod';
import type { JSONSchema } from 'zod/v4/core';
import { ERROR_CODES, ERROR_REASONS, type ErrorCode, reasonsOf, STATUS_BY_CODE } from '../errors.js';
import { REQUEST_ID_PATTERN } from '../http/requestId.js';
import { documentedSchemas } from '../routes/payloadSchemas.js';
import type { PublicRoute } from '../routes/publicRoute.js';
import { DESCRIPTION, FAILURES, requestHeaderParameters, responseHeaders } from './documentText.js';
import { RECORDED_EXAMPLES } from './recordedExamples.js';

// The OpenAPI 3.1 document, generated from the routes' zod declarations, the closed unions of codes
// and reasons, and examples recorded from real answers: nothing in it is written twice by hand.

const ErrorEntry = z
  .object({
    code: z
      .enum(ERROR_CODES)
      .register(documentedSchemas, { id: 'ErrorCode', description: 'What went wrong; each code has one HTTP status.' }),
    message: z.string().min(1).describe('For people; may change. Never holds upstream details.'),
    reason: z.enum(ERROR_REASONS).register(documentedSchemas, {
      id: 'ErrorReason',
      description: 'A stable, machine-readable refinement of the code.',
    }),
  })
  .strict()
  .register(documentedSchemas, { id: 'ErrorEntry', description: 'One error.' });

const ErrorMeta = z
  .object({
    requestId: z
      .string()
      .regex(REQUEST_ID_PATTERN)
      .describe('The X-Request-Id of this answer: quote it when reporting a problem.'),
  })
  .strict()
  .register(documentedSchemas, { id: 'ErrorMeta', description: 'About the failed request.' });

z.object({ data: z.null(), meta: ErrorMeta, errors: z.array(ErrorEntry).min(1) })
  .strict()
  .register(documentedSchemas, {
    id: 'ErrorEnvelope',
    description: 'Every failure: `data` null and at least one error.',
  });

const SUCCESS_HEADERS = ['RateLimit-Policy', 'RateLimit', 'ETag', 'Cache-Control', 'Cache-Status', 'Age', 'Vary'];

const ref = (kind: string, name: string): ReferenceObject => ({ $ref: `#/components/${kind}/${name}` });

const headerComponent = (name: string): string => name.replaceAll('-', '');

/** X-Request-Id and the named headers; a trailing `?` marks one that only some answers of the status carry. */
function headerRefs(names: readonly string[]): ResponseObject['headers'] {
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

function operation(route: PublicRoute): OperationObject {
  const recorded = RECORDED_EXAMPLES.success[route.operationId] ?? {};
  const envelopeId = documentedSchemas.get(route.envelope)?.id;
  if (envelopeId === undefined) throw new Error(`the envelope of ${route.path} is not registered`);
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: ['v1'],
    security: [{ bearerApiKey: [] }, { headerApiKey: [] }],
    parameters: [...queryParameters(route), ref('parameters', 'XRequestId'), ref('parameters', 'IfNoneMatch')],
    responses: {
      '200': {
        description: route.summary,
        headers: headerRefs(SUCCESS_HEADERS),
        content: {
          'application/json': {
            schema: ref('schemas', envelopeId),
            examples: Object.fromEntries(Object.entries(recorded).map(([name, value]) => [name, { value }])),
          },
        },
      },
      '304': {
        description: 'Not Modified: If-None-Match named the current ETag. No body; counts as a successful call.',
        headers: headerRefs(SUCCESS_HEADERS),
      },
      ...Object.fromEntries(ERROR_CODES.map((code) => [STATUS_BY_CODE[code], failureResponse(code)])),
    },
  };
}

/** One query parameter per field of the route's zod query (as parsed), the first recorded answer's echo as example. */
function queryParameters(route: PublicRoute): ParameterObject[] {
  const [first] = Object.values(RECORDED_EXAMPLES.success[route.operationId] ?? {});
  const data = typeof first === 'object' && first !== null && 'data' in first ? first.data : null;
  const echoed: Readonly<Record<string, unknown>> = typeof data === 'object' && data !== null ? { ...data } : {};
  const query = asOpenApiSchema(z.toJSONSchema(route.query, JSON_SCHEMA_OPTIONS));
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

/** The ErrorEnvelope narrowed to one code and its reasons, with its headers and recorded examples. */
function failureResponse(code: ErrorCode): ResponseObject {
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
            // Every code has reasons (the closed set in errors.ts).
            reason: { type: 'string', enum: reasonsOf(code) },
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

const JSON_SCHEMA_OPTIONS = {
  target: 'draft-2020-12',
  io: 'output',
  // zod states the safe-integer range of every int; the document says only what the API promises.
  override({ jsonSchema: schema }: { jsonSchema: { minimum?: number; maximum?: number } }): void {
    if (schema.maximum === Number.MAX_SAFE_INTEGER) delete schema.maximum;
    if (schema.minimum === Number.MIN_SAFE_INTEGER) delete schema.minimum;
  },
} as const;

/** OpenAPI 3.1 and zod both speak JSON Schema 2020-12; their types differ only in how they spell boolean subschemas. */
function asOpenApiSchema(schema: JSONSchema.BaseSchema): SchemaObject {
  const { $schema: _dialect, $id: _id, ...rest } = schema;
  return rest as SchemaObject;
}

/** `publicBaseUrl`: where consumers reach the gateway; absent: `/`, the origin the document was loaded from. */
export function buildOpenApiDocument(
  routes: readonly PublicRoute[],
  options: { readonly publicBaseUrl?: string | undefined } = {},
): OpenAPIObject {
  const { schemas } = z.toJSONSchema(documentedSchemas, {
    ...JSON_SCHEMA_OPTIONS,
    uri: (id) => ref('schemas', id).$ref,
  });
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
      schemas: Object.fromEntries(Object.entries(schemas).map(([id, schema]) => [id, asOpenApiSchema(schema)])),
      parameters: requestHeaderParameters,
      headers: Object.fromEntries(
        Object.entries(responseHeaders).map(([name, header]) => [headerComponent(name), header]),
      ),
      // The recorded failures, one named example each, shared by every operation.
      examples: Object.fromEntries(
        Object.values(RECORDED_EXAMPLES.failures).flatMap((byName) =>
          Object.entries(byName).map(([name, value]) => [name, { summary: name.replaceAll('_', ' '), value }]),
        ),
      ),
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
