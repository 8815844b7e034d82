import { ApiError, UpstreamError } from '../errors.js';
import type { TypedDocumentString } from '../generated/graphql.js';
import { inSpan } from '../telemetry/spans.js';
import { PLATFORM_ANSWER_MAX_BYTES } from '../upstream/answerSizes.js';
import { failureFromStatus, failureFromThrown } from '../upstream/upstreamFailure.js';
import { createUpstreamHttp, type UpstreamAnswer } from '../upstream/upstreamHttp.js';
import { createOrganizationShares, PLATFORM_SHARES } from './organizationShares.js';

/**
 * The platform's GraphQL API, through the generated typed documents only: request values travel as variables.
 * Each call is one POST of `{ query, variables, operationName }` through the gateway's undici transport.
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
  // A connection per place, and one for the readiness probe, which takes no place.
  const http = createUpstreamHttp({
    timeoutMs: options.timeoutMs,
    connections: PLATFORM_SHARES.inFlight + 1,
    maxAnswerBytes: PLATFORM_ANSWER_MAX_BYTES,
  });
  const url = new URL(options.url);
  // GraphQL over HTTP: a JSON body, and either answer media type.
  const headers = {
    authorization: `Bearer ${options.token}`,
    'content-type': 'application/json',
    accept: 'application/graphql-response+json, application/json',
  };
  const shares = createOrganizationShares();

  const call = async <TResult, TVariables extends Record<string, unknown>>(
    document: TypedDocumentString<TResult, TVariables>,
    variables: TVariables,
    operation: string,
  ): Promise<TResult> => {
    const started = performance.now();
    // Counted from the request, the wait for a place included: a place is free once its caller is answered.
    const deadline = started + options.timeoutMs;
    const body = JSON.stringify({ query: document.toString(), variables, operationName: operation });
    const send = () => http.send(url, { method: 'POST', headers, body, deadline });
    try {
      const organizationId = variables.organizationId;
      // Every data query waits its organization's turn; the readiness probe, scoped to none, is not held back.
      const answer =
        typeof organizationId === 'string' ? await shares.run(organizationId, send, deadline) : await send();
      const data = answerData(answer, operation) as TResult;
      options.onCall?.(operation, (performance.now() - started) / 1000, 'ok');
      return data;
    } catch (err: unknown) {
      // Refused a place (the caller's own excess): no platform call was made.
      if (err instanceof ApiError) throw err;
      const failure = failureFromThrown('platform', operation, err);
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

type JsonObject = Record<string, unknown>;

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The operation's data from a GraphQL-over-HTTP answer, or the failure it stands for: a status outside 2xx
 * (429/503 throttled), any `errors` (partial data included), or no `data` object (not JSON, a batch's array).
 */
export function answerData(answer: UpstreamAnswer, operation: string): JsonObject {
  let body: unknown;
  try {
    body = answer.text === '' ? undefined : JSON.parse(answer.text);
  } catch {
    body = undefined;
  }
  const errors = isObject(body) && Array.isArray(body.errors) ? body.errors : [];
  if (answer.status < 200 || answer.status > 299 || errors.length > 0) {
    const messages = errors.map((error) => (isObject(error) ? String(error.message) : String(error))).join('; ');
    throw failureFromStatus('platform', operation, answer.status, answer.headers['retry-after'], messages);
  }
  if (!isObject(body) || !isObject(body.data)) {
    throw new UpstreamError('platform', 'bad_answer', `${operation}: answer has no data`);
  }
  return body.data;
}
