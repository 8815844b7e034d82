import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { ClientError, GraphQLClient, type RequestOptions } from 'graphql-request';
import { UpstreamError } from '../errors.js';
import { retryAfterSeconds } from '../upstream/retryAfter.js';
import { CallTimeoutError, createNodeHttpFetch } from '../upstream/nodeHttpFetch.js';
import { createDocumentPrinter } from './printedDocuments.js';

/**
 * The platform's GraphQL API, reached only through typed documents generated from
 * queries/*.graphql. Variables carry every value that came from a request; the
 * query text is fixed at build time.
 */
export interface PlatformClient {
  request<TResult, TVariables extends Record<string, unknown>>(
    document: TypedDocumentNode<TResult, TVariables>,
    variables: TVariables,
  ): Promise<TResult>;
}

export interface PlatformClientOptions {
  url: string;
  token: string;
  timeoutMs: number;
  /** Called after every call with its duration and outcome (metrics). */
  onCall?: (operation: string, seconds: number, outcome: 'ok' | UpstreamError['failure']) => void;
}

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const documents = createDocumentPrinter();
  const client = new GraphQLClient(options.url, {
    headers: { authorization: `Bearer ${options.token}` },
    // The node:http fetch answers with the part of a Response graphql-request reads
    // (see UpstreamResponse), not a whole one: the cast is that boundary.
    fetch: createNodeHttpFetch({ timeoutMs: options.timeoutMs }) as unknown as typeof fetch,
    // Documents are passed printed (no print per call); with this option graphql-request
    // does not parse them again, and the serializer posts the operation name it omits.
    excludeOperationName: true,
    jsonSerializer: documents.jsonSerializer,
  });
  return {
    async request<TResult, TVariables extends Record<string, unknown>>(
      document: TypedDocumentNode<TResult, TVariables>,
      variables: TVariables,
    ): Promise<TResult> {
      const started = performance.now();
      const printed = documents.print(document);
      const operation = printed.label;
      try {
        // graphql-request's conditional option type cannot see through a generic TVariables;
        // the codegen types already guarantee document and variables belong together.
        // No signal: the fetch ends a call at timeoutMs itself (see createNodeHttpFetch).
        const request = { document: printed.query, variables } as unknown as RequestOptions<TVariables, TResult>;
        const data = await client.request<TResult, TVariables>(request);
        // A batch-shaped answer (a JSON array) comes back as an array: not our operation's data.
        if (data === null || typeof data !== 'object' || Array.isArray(data)) {
          throw new UpstreamError('platform', 'bad_answer', `${operation}: answer has no data`);
        }
        options.onCall?.(operation, (performance.now() - started) / 1000, 'ok');
        return data;
      } catch (err: unknown) {
        const failure = toUpstreamError(err, operation);
        options.onCall?.(operation, (performance.now() - started) / 1000, failure.failure);
        throw failure;
      }
    },
  };
}

function toUpstreamError(err: unknown, operation: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (err instanceof CallTimeoutError) return new UpstreamError('platform', 'timeout', `${operation}: no answer in time`);
  if (err instanceof ClientError) {
    const status = err.response.status;
    if (status === 429 || status === 503) {
      return new UpstreamError(
        'platform',
        'throttled',
        `${operation}: status ${status}`,
        retryAfterSeconds(err.response.headers?.get?.('retry-after') ?? null),
      );
    }
    const messages = (err.response.errors ?? []).map((e) => e.message).join('; ');
    return new UpstreamError('platform', 'bad_answer', `${operation}: status ${status} ${messages}`.trim());
  }
  if (isConnectionFailure(err)) {
    return new UpstreamError('platform', 'unreachable', `${operation}: ${failureDetail(err)}`);
  }
  return new UpstreamError('platform', 'bad_answer', `${operation}: ${failureDetail(err)}`);
}

/**
 * fetch rejects with TypeError("fetch failed") whose cause carries a socket error code
 * (ECONNREFUSED, ENOTFOUND, UND_ERR_SOCKET, ...); some fetch wrappers reject with the
 * socket error itself. Either way the platform was never heard from.
 */
function isConnectionFailure(err: unknown): boolean {
  if (err instanceof TypeError && /fetch failed/i.test(err.message)) return true;
  return hasSocketErrorCode(err) || (err instanceof Error && hasSocketErrorCode(err.cause));
}

function hasSocketErrorCode(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || !('code' in value)) return false;
  const code = (value as { code: unknown }).code;
  return typeof code === 'string' && /^(E[A-Z]+|UND_ERR_[A-Z_]+)$/.test(code);
}

function failureDetail(err: unknown): string {
  if (!(err instanceof Error)) {
    const message = typeof err === 'object' && err !== null && 'message' in err ? (err as { message: unknown }).message : err;
    return String(message);
  }
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}
