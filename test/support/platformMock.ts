import assert from 'node:assert/strict';
import nock from 'nock';
import { PLATFORM_URL } from './fakeServices.js';

/** One GraphQL POST the gateway sent to the platform, as the platform saw it. */
export interface PostedOperation {
  readonly operationName: string | undefined;
  readonly query: string;
  readonly variables: Readonly<Record<string, unknown>>;
  readonly authorization: string | undefined;
}

/** What the fake platform answers to one POST. A string body is sent as-is (malformed answers). */
export interface PlatformReply {
  readonly status?: number;
  readonly body: unknown;
  readonly headers?: Record<string, string>;
  /** Holds the answer back this long (for timeouts). */
  readonly delayMs?: number;
}

export interface PlatformMock {
  readonly scope: nock.Scope;
  /** Every POST answered so far, in order. */
  readonly posted: PostedOperation[];
}

const platform = new URL(PLATFORM_URL);

/**
 * The platform answers the next POSTs in the given order, one reply each, and records
 * what each POST carried. `scope.done()` then proves every reply was asked for.
 */
export function mockPlatform(...replies: PlatformReply[]): PlatformMock {
  const scope = nock(platform.origin);
  const posted: PostedOperation[] = [];
  for (const reply of replies) {
    const interceptor = scope.post(platform.pathname);
    if (reply.delayMs !== undefined) interceptor.delay(reply.delayMs);
    interceptor.reply(function (_uri, body) {
      posted.push(toPostedOperation(body, this.req.headers.authorization));
      const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      return [reply.status ?? 200, payload, { 'content-type': 'application/json', ...reply.headers }];
    });
  }
  return { scope, posted };
}

/**
 * The platform cannot be reached: the connection fails before any answer. An Error
 * with a code, as node:http gives (nock drops a plain object on node:http requests).
 */
export function unreachablePlatform(): nock.Scope {
  return nock(platform.origin)
    .post(platform.pathname)
    .replyWithError(Object.assign(new Error(`connect ECONNREFUSED ${platform.host}`), { code: 'ECONNREFUSED' }));
}

/** `{ data }` as a GraphQL answer. */
export function graphqlData(data: unknown): { data: unknown } {
  return { data };
}

function toPostedOperation(body: nock.Body, authorization: string | undefined): PostedOperation {
  const parsed: unknown = typeof body === 'string' ? JSON.parse(body) : body;
  if (typeof parsed !== 'object' || parsed === null) throw new TypeError('the gateway posted a non-object body');
  const record = parsed as Record<string, unknown>;
  if (typeof record.query !== 'string') throw new TypeError('the gateway posted no query text');
  return {
    operationName: typeof record.operationName === 'string' ? record.operationName : undefined,
    query: record.query,
    variables: (record.variables ?? {}) as Record<string, unknown>,
    authorization,
  };
}

/** Every platform call carried the service token and was scoped to `organizationId`. */
export function assertEveryCallScoped(posted: readonly PostedOperation[], organizationId: string, token: string): void {
  assert.ok(posted.length > 0, 'the gateway made no platform call');
  for (const operation of posted) {
    assert.equal(operation.authorization, `Bearer ${token}`, `${operation.operationName} without the service token`);
    assert.equal(operation.variables.organizationId, organizationId, `${operation.operationName} scoped elsewhere`);
  }
}
