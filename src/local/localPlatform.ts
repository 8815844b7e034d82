import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  buildSchema,
  execute,
  GraphQLError,
  GraphQLScalarType,
  Kind,
  parse,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
} from 'graphql';
import { isCalendarDate, parseDateTime } from '../rfc3339.js';
import { listenOn } from '../http/listenOn.js';
import { BodyTooLarge, closeServer, hasServiceToken, newServiceToken, readBody, sendJson, sendUnauthorized } from './localHttp.js';
import type { PlatformData } from './platformData.js';
import { rootValue } from './platformResolvers.js';

/**
 * The embedded platform: a real GraphQL server for the vendored platform.graphql, on
 * loopback, with the platform's service-token auth and page limit. Parsing and validating
 * happen once per distinct query text, so a benchmark measures the gateway, not this.
 */

export interface LocalPlatformOptions {
  readonly data: PlatformData;
  /** Service token callers must present; a random one by default. */
  readonly token?: string;
  readonly host?: string;
  /** 0 (default): a free port. */
  readonly port?: number;
}

export interface LocalPlatform {
  /** The GraphQL endpoint, e.g. http://127.0.0.1:41234/graphql */
  readonly url: string;
  readonly token: string;
  close(): Promise<void>;
}

export interface GraphQLRequestBody {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

const SCHEMA_PATH = new URL('../../queries/schema/platform.graphql', import.meta.url);
const MAX_BODY_BYTES = 1_000_000;
const MAX_CACHED_DOCUMENTS = 500;

export async function startLocalPlatform(options: LocalPlatformOptions): Promise<LocalPlatform> {
  const token = options.token ?? newServiceToken();
  const executor = createPlatformExecutor(options.data);
  const server = createServer((req, res) => {
    handle(req, res, token, executor).catch(() => {
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'internal error' }] });
      else res.destroy();
    });
  });
  const base = await listenOn(server, options.host ?? '127.0.0.1', options.port ?? 0);
  return { url: `${base}/graphql`, token, close: () => closeServer(server) };
}

export interface PlatformExecutor {
  execute(body: GraphQLRequestBody): ExecutionResult;
}

/** Executes GraphQL requests against the data, without HTTP (the server and tests use it). */
export function createPlatformExecutor(data: PlatformData): PlatformExecutor {
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
    // Bounded: the oldest text goes first; the gateway only ever sends a handful.
    if (documents.size >= MAX_CACHED_DOCUMENTS) documents.delete(documents.keys().next().value ?? '');
    documents.set(query, prepared);
    return prepared;
  };

  return {
    execute(body) {
      const document = documentOf(body.query);
      if (Array.isArray(document)) return { errors: document };
      const result = execute({
        schema,
        document: document as DocumentNode,
        rootValue: root,
        variableValues: body.variables ?? undefined,
        operationName: body.operationName ?? undefined,
      });
      if (result instanceof Promise) throw new Error('the local platform resolves synchronously');
      // No data at all: the variables did not fit the operation.
      if (!('data' in result) || result.data === undefined) {
        return { errors: (result.errors ?? []).map((e) => withCode(e, 'BAD_USER_INPUT')) };
      }
      return result;
    },
  };
}

let cachedSchema: GraphQLSchema | null = null;

/** The vendored schema, with its Date and DateTime scalars checking what they accept. */
function platformSchema(): GraphQLSchema {
  if (cachedSchema) return cachedSchema;
  const schema = buildSchema(readFileSync(SCHEMA_PATH, 'utf8'));
  const date = schema.getType('Date');
  const dateTime = schema.getType('DateTime');
  if (date instanceof GraphQLScalarType) checkScalar(date, isCalendarDate, 'Date must be a calendar date YYYY-MM-DD');
  if (dateTime instanceof GraphQLScalarType) {
    checkScalar(dateTime, (text) => parseDateTime(text) !== null, 'DateTime must be an RFC 3339 date-time');
  }
  cachedSchema = schema;
  return schema;
}

function checkScalar(type: GraphQLScalarType, accepts: (text: string) => boolean, message: string): void {
  type.parseValue = (value: unknown) => {
    if (typeof value !== 'string' || !accepts(value)) throw new GraphQLError(message);
    return value;
  };
  type.parseLiteral = (node) => {
    if (node.kind !== Kind.STRING || !accepts(node.value)) throw new GraphQLError(message);
    return node.value;
  };
}

function withCode(error: GraphQLError, code: string): GraphQLError {
  if (error.extensions['code'] !== undefined) return error;
  return new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    path: error.path,
    originalError: error.originalError,
    extensions: { ...error.extensions, code },
  });
}

async function handle(req: IncomingMessage, res: ServerResponse, token: string, executor: PlatformExecutor): Promise<void> {
  if (!hasServiceToken(req, token)) return sendUnauthorized(res);
  const path = (req.url ?? '/').split('?')[0];
  if (path !== '/graphql') return sendJson(res, 404, { errors: [{ message: 'not found: POST /graphql' }] });
  if (req.method !== 'POST') return sendJson(res, 405, { errors: [{ message: 'use POST' }] }, { allow: 'POST' });

  let text: string;
  try {
    text = await readBody(req, MAX_BODY_BYTES);
  } catch (err: unknown) {
    if (err instanceof BodyTooLarge) return sendJson(res, 413, { errors: [{ message: err.message }] });
    throw err;
  }
  const body = toRequestBody(text);
  if (typeof body === 'string') return sendJson(res, 400, { errors: [{ message: body, extensions: { code: 'BAD_REQUEST' } }] });

  const result = executor.execute(body);
  const answer: { data?: unknown; errors?: GraphQLFormattedError[] } = {};
  if ('data' in result) answer.data = result.data;
  if (result.errors && result.errors.length > 0) answer.errors = result.errors.map((e) => e.toJSON());
  sendJson(res, 200, answer);
}

/** The POST body as a GraphQL request, or why it is not one. */
function toRequestBody(text: string): GraphQLRequestBody | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'the body is not JSON';
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'the body must be a JSON object';
  const { query, variables, operationName } = value as Record<string, unknown>;
  if (typeof query !== 'string' || query.trim() === '') return 'query must be a non-empty string';
  if (variables !== undefined && variables !== null && (typeof variables !== 'object' || Array.isArray(variables))) {
    return 'variables must be an object';
  }
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') {
    return 'operationName must be a string';
  }
  return {
    query,
    variables: (variables ?? null) as Record<string, unknown> | null,
    operationName: (operationName ?? null) as string | null,
  };
}
