import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { ClientError, GraphQLClient, type RequestOptions } from 'graphql-request';
import { UpstreamError } from '../errors.js';
import { retryAfterSeconds } from '../upstream/retryAfter.js';

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
  const client = new GraphQLClient(options.url, {
    headers: { authorization: `Bearer ${options.token}` },
  });
  return {
    async request<TResult, TVariables extends Record<string, unknown>>(
      document: TypedDocumentNode<TResult, TVariables>,
      variables: TVariables,
    ): Promise<TResult> {
      const started = performance.now();
      const operation = operationName(document);
      const signal = AbortSignal.timeout(options.timeoutMs);
      try {
        // graphql-request's conditional option type cannot see through a generic TVariables;
        // the codegen types already guarantee document and variables belong together.
        const request = { document, variables, signal } as unknown as RequestOptions<TVariables, TResult>;
        const data = await client.request<TResult, TVariables>(request);
        if (data === null || typeof data !== 'object') {
          throw new UpstreamError('platform', 'bad_answer', `${operation}: answer has no data`);
        }
        options.onCall?.(operation, (performance.now() - started) / 1000, 'ok');
        return data;
      } catch (err: unknown) {
        const failure = toUpstreamError(err, signal, operation);
        options.onCall?.(operation, (performance.now() - started) / 1000, failure.failure);
        throw failure;
      }
    },
  };
}

function operationName(document: TypedDocumentNode<unknown, never>): string {
  for (const definition of document.definitions) {
    if (definition.kind === 'OperationDefinition' && definition.name) return definition.name.value;
  }
  return 'anonymous';
}

function toUpstreamError(err: unknown, signal: AbortSignal, operation: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (signal.aborted) return new UpstreamError('platform', 'timeout', `${operation}: no answer in time`);
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
  const message = err instanceof Error ? err.message : String(err);
  if (err instanceof TypeError && /fetch failed/i.test(message)) {
    return new UpstreamError('platform', 'unreachable', `${operation}: ${describeCause(err)}`);
  }
  return new UpstreamError('platform', 'bad_answer', `${operation}: ${message}`);
}

function describeCause(err: Error): string {
  const cause = err.cause;
  if (cause instanceof Error) return `${err.message} (${cause.message})`;
  return err.message;
}
