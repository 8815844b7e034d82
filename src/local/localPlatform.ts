import { readFileSync } from 'node:fs';
import Router from '@koa/router';
import {
  buildSchema,
  type DocumentNode,
  type ExecutionResult,
  executeSync,
  GraphQLError,
  GraphQLScalarType,
  type GraphQLSchema,
  Kind,
  parse,
  validate,
} from 'graphql';
import { z } from 'zod';
import { isCalendarDate, parseDateTime } from '../rfc3339.js';
import { type ServedUpstream, serveUpstream } from './localHttp.js';
import { rootValue } from './platformResolvers.js';
import type { PlatformData } from './seedData.js';

/** The embedded stand-in for the platform: a GraphQL server for the vendored platform.graphql. */

const GraphQLRequestBody = z.object({
  query: z.string().refine((query) => query.trim() !== '', 'query must be a non-empty string'),
  variables: z.record(z.string(), z.unknown()).nullish(),
  operationName: z.string().nullish(),
});
export type GraphQLRequestBody = z.infer<typeof GraphQLRequestBody>;

const SCHEMA_PATH = new URL('../../queries/schema/platform.graphql', import.meta.url);
const MAX_CACHED_DOCUMENTS = 500;
const ERROR_CODES: Readonly<Record<number, string>> = {
  400: 'BAD_REQUEST',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  413: 'PAYLOAD_TOO_LARGE',
};

/** Serves the data at `/graphql`: the url is that endpoint, e.g. http://127.0.0.1:41234/graphql */
export async function startLocalPlatform(data: PlatformData): Promise<ServedUpstream> {
  const executor = createPlatformExecutor(data);
  const router = new Router();
  router.post('/graphql', (ctx) => {
    const body = GraphQLRequestBody.safeParse(ctx.request.body);
    if (!body.success) return ctx.throw(400, body.error.issues.map((issue) => issue.message).join('; '));
    const { data, errors } = executor.execute(body.data);
    ctx.body = { ...(data === undefined ? {} : { data }), ...(errors?.length ? { errors } : {}) };
  });
  const served = await serveUpstream(router, (status, message) => ({
    errors: [{ message, extensions: { code: ERROR_CODES[status] ?? 'INTERNAL_SERVER_ERROR' } }],
  }));
  return { ...served, url: `${served.url}/graphql` };
}

/** Executes GraphQL requests against the data, without HTTP (the server and tests use it). */
export function createPlatformExecutor(data: PlatformData): { execute(body: GraphQLRequestBody): ExecutionResult } {
  const schema = platformSchema();
  const root = rootValue(data);
  const documents = new Map<string, DocumentNode | readonly GraphQLError[]>();

  const documentOf = (query: string): DocumentNode | readonly GraphQLError[] => {
    const known = documents.get(query);
    if (known) return known;
    let prepared: DocumentNode | readonly GraphQLError[];
    try {
      const document = parse(query);
      const errors = validate(schema, document);
      prepared = errors.length > 0 ? errors.map((e) => withCode(e, 'GRAPHQL_VALIDATION_FAILED')) : document;
    } catch (err: unknown) {
      prepared = [withCode(err instanceof GraphQLError ? err : new GraphQLError(String(err)), 'GRAPHQL_PARSE_FAILED')];
    }
    // Parsed and validated once per query text, so a benchmark measures the gateway, not this.
    // Bounded: the oldest text goes first; the gateway only ever sends a handful.
    if (documents.size >= MAX_CACHED_DOCUMENTS) documents.delete(documents.keys().next().value ?? '');
    documents.set(query, prepared);
    return prepared;
  };

  return {
    execute(body) {
      const document = documentOf(body.query);
      if (Array.isArray(document)) return { errors: document };
      const result = executeSync({
        schema,
        document: document as DocumentNode,
        rootValue: root,
        variableValues: body.variables ?? undefined,
        operationName: body.operationName ?? undefined,
      });
      // No data at all: the variables did not fit the operation.
      if (!('data' in result) || result.data === undefined) {
        return { errors: (result.errors ?? []).map((e) => withCode(e, 'BAD_USER_INPUT')) };
      }
      return result;
    },
  };
}

/** The vendored schema, with its Date and DateTime scalars checking what they accept. */
function platformSchema(): GraphQLSchema {
  const schema = buildSchema(readFileSync(SCHEMA_PATH, 'utf8'));
  checkScalar(schema, 'Date', isCalendarDate, 'Date must be a calendar date YYYY-MM-DD');
  checkScalar(schema, 'DateTime', (text) => parseDateTime(text) !== null, 'DateTime must be an RFC 3339 date-time');
  return schema;
}

function checkScalar(schema: GraphQLSchema, name: string, accepts: (text: string) => boolean, message: string) {
  const type = schema.getType(name);
  if (!(type instanceof GraphQLScalarType)) throw new Error(`platform.graphql has no scalar ${name}`);
  const checked = (value: unknown) => {
    if (typeof value !== 'string' || !accepts(value)) throw new GraphQLError(message);
    return value;
  };
  type.parseValue = checked;
  type.parseLiteral = (node) => checked(node.kind === Kind.STRING ? node.value : null);
}

/** The error with `code` in its extensions unless it has one: graphql made it for this document or request alone. */
function withCode(error: GraphQLError, code: string): GraphQLError {
  error.extensions.code ??= code;
  return error;
}
