import { ClientError, GraphQLClient } from 'graphql-request';
import { ApiError, UpstreamError } from '../errors.js';
import type { TypedDocumentString } from '../generated/graphql.js';
import { inSpan } from '../telemetry/spans.js';
import { withDeadline } from '../upstream/deadline.js';
import { failureFromStatus, failureFromThrown } from '../upstream/upstreamFailure.js';
import { createUpstreamHttp } from '../upstream/upstreamHttp.js';
import { createOrganizationShares } from './organizationShares.js';
import { platformFetch } from './platformFetch.js';

/**
 * The platform's GraphQL API, through the generated typed documents only: request values travel as variables.
 * With tracing on, each call runs in a span `platform <Operation>`.
 */
export interface PlatformClient {
  request<TResult, TVariables extends Record<string, unknown>>(
    document: TypedDocumentString<TResult, TVariables>,
    variables: TVariables,
  ): Promise<TResult>;
}

export interface PlatformClientOptions {
  url: string;
  token: string;
  timeoutMs: number;
  onCall?: (operation: string, seconds: number, outcome: 'ok' | UpstreamError['failure']) => void;
}

export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const http = createUpstreamHttp({ timeoutMs: options.timeoutMs });
  const headers = { authorization: `Bearer ${options.token}` };
  const shares = createOrganizationShares();

  const call = async <TResult, TVariables extends Record<string, unknown>>(
    document: TypedDocumentString<TResult, TVariables>,
    variables: TVariables,
    operation: string,
  ): Promise<TResult> => {
    const started = performance.now();
    // Counted from the request, the wait for a place included: a place is free once its caller is answered.
    const deadline = started + options.timeoutMs;
    // A client is a URL and its options: one per call, its fetch bound to the deadline, costs nothing.
    const send = async (): Promise<TResult> => {
      const client = new GraphQLClient(options.url, { headers, fetch: platformFetch(http, deadline) });
      const data = await client.request<TResult, Record<string, unknown>>({ document: document.toString(), variables });
      // A batch-shaped answer (a JSON array) comes back as an array: not our operation's data.
      if (data === null || typeof data !== 'object' || Array.isArray(data)) {
        throw new UpstreamError('platform', 'bad_answer', `${operation}: answer has no data`);
      }
      return data;
    };
    try {
      const organizationId = variables.organizationId;
      // Every data query waits its organization's turn; the readiness probe, scoped to none, is not held back.
      const data =
        typeof organizationId === 'string'
          ? await withDeadline(options.timeoutMs, () => shares.run(organizationId, send, deadline), operation)
          : await send();
      options.onCall?.(operation, (performance.now() - started) / 1000, 'ok');
      return data;
    } catch (err: unknown) {
      // Refused a place (the caller's own excess): no platform call was made.
      if (err instanceof ApiError) throw err;
      const failure = toUpstreamError(err, operation);
      options.onCall?.(operation, (performance.now() - started) / 1000, failure.failure);
      throw failure;
    }
  };

  return {
    request(document, variables) {
      const operation = operationName(document);
      const attributes = { 'graphql.operation.name': operation };
      return inSpan(`platform ${operation}`, () => call(document, variables, operation), { attributes });
    },
  };
}

function operationName(document: TypedDocumentString<unknown, never>): string {
  return /^\s*(?:query|mutation|subscription)\s+([_A-Za-z]\w*)/.exec(document.toString())?.[1] ?? 'anonymous';
}

function toUpstreamError(err: unknown, operation: string): UpstreamError {
  if (err instanceof ClientError) {
    const { errors, status, headers } = err.response;
    const messages = (errors ?? []).map((e) => e.message).join('; ');
    return failureFromStatus('platform', operation, status, headers.get('retry-after'), messages);
  }
  return failureFromThrown('platform', operation, err);
}
