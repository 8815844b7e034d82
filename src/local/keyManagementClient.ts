import type { Key } from './keyStore.js';

/**
 * The organization-settings calls of the key service (create, list, revoke) over HTTP, as
 * key-service.md describes them. Every refusal becomes a KeyManagementRefusal with a code
 * and a one-line message for a person.
 */

export interface KeyServiceTarget {
  readonly url: string;
  readonly token: string;
}

export interface Actor {
  readonly id: string;
  readonly permissions: readonly string[];
}

export type RefusalCode =
  | 'forbidden'
  | 'not_found'
  | 'active_key_limit'
  | 'invalid_expiry'
  | 'invalid_request'
  | 'unauthorized'
  | 'busy'
  | 'unreachable'
  | 'unexpected';

export class KeyManagementRefusal extends Error {
  constructor(
    readonly code: RefusalCode,
    message: string,
    /** For `unreachable`: the connection was never made, so nothing happened. */
    readonly connectionRefused = false,
  ) {
    super(message);
    this.name = 'KeyManagementRefusal';
  }
}

const TIMEOUT_MS = 10_000;

export async function createKey(
  target: KeyServiceTarget,
  actor: Actor,
  organizationId: string,
  request: { name: string; permissions: readonly string[]; expiresAt?: string },
): Promise<{ key: Key; plaintext: string }> {
  const answer = await call(target, actor, 'POST', `/v1/organizations/${encodeURIComponent(organizationId)}/keys`, request);
  if (answer.status === 201) return answer.body as { key: Key; plaintext: string };
  throw refusal(answer, actor, { organizationId });
}

export async function listKeys(target: KeyServiceTarget, actor: Actor, organizationId: string): Promise<Key[]> {
  const answer = await call(target, actor, 'GET', `/v1/organizations/${encodeURIComponent(organizationId)}/keys`);
  if (answer.status === 200) return (answer.body as { keys: Key[] }).keys;
  throw refusal(answer, actor, { organizationId });
}

export async function revokeKey(target: KeyServiceTarget, actor: Actor, organizationId: string, keyId: string): Promise<Key> {
  const path = `/v1/organizations/${encodeURIComponent(organizationId)}/keys/${encodeURIComponent(keyId)}/revoke`;
  const answer = await call(target, actor, 'POST', path, {});
  if (answer.status === 200) return (answer.body as { key: Key }).key;
  throw refusal(answer, actor, { organizationId, keyId });
}

interface Answer {
  status: number;
  body: unknown;
  retryAfter: string | null;
}

async function call(target: KeyServiceTarget, actor: Actor, method: string, path: string, body?: unknown): Promise<Answer> {
  let response: Response;
  try {
    response = await fetch(`${target.url.replace(/\/+$/, '')}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        'x-actor-id': actor.id,
        'x-actor-permissions': actor.permissions.join(','),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (err: unknown) {
    const code = causeCode(err);
    throw new KeyManagementRefusal(
      'unreachable',
      `the key service at ${target.url} is unreachable (${code ?? (err instanceof Error ? err.name : 'error')})`,
      code === 'ECONNREFUSED',
    );
  }
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  return { status: response.status, body: parsed, retryAfter: response.headers.get('retry-after') };
}

function refusal(answer: Answer, actor: Actor, about: { organizationId: string; keyId?: string }): KeyManagementRefusal {
  const error =
    typeof answer.body === 'object' && answer.body !== null ? (answer.body as { error?: unknown }).error : undefined;
  if (answer.status === 401) {
    return new KeyManagementRefusal('unauthorized', 'the key service refused the service token (401): check KEY_SERVICE_TOKEN');
  }
  if (answer.status === 429 || answer.status === 503) {
    const wait = answer.retryAfter ? `; retry after ${answer.retryAfter} s` : '; retry later';
    return new KeyManagementRefusal('busy', `the key service is busy (${answer.status})${wait}`);
  }
  switch (error) {
    case 'forbidden':
      return new KeyManagementRefusal('forbidden', `forbidden: ${actor.id} does not hold the manage_api_keys permission`);
    case 'not_found':
      return new KeyManagementRefusal(
        'not_found',
        about.keyId === undefined
          ? `not found: the key service knows no organization ${about.organizationId}`
          : `not found: organization ${about.organizationId} has no key ${about.keyId}`,
      );
    case 'active_key_limit':
      return new KeyManagementRefusal(
        'active_key_limit',
        `active key limit: ${about.organizationId} already has 50 active keys; revoke one before creating another`,
      );
    case 'invalid_expiry':
      return new KeyManagementRefusal(
        'invalid_expiry',
        'invalid expiry: a key must expire after now and at most 730 days from now (--expires-in-days 1 to 730)',
      );
    case 'invalid_request':
      return new KeyManagementRefusal(
        'invalid_request',
        'invalid request: the name must be 1 to 100 characters and the permissions a comma-separated list',
      );
    default:
      return new KeyManagementRefusal('unexpected', `unexpected answer from the key service: status ${answer.status}`);
  }
}

function causeCode(err: unknown): string | null {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && typeof current === 'object' && current !== null; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}
