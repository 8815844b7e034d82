import { errorCode } from './dataDirFiles.js';
import { ACTIVE_KEY_LIMIT, type Key, MAX_LIFETIME_DAYS, NAME_MAX_CHARACTERS } from './keyStore.js';

/**
 * The organization-settings calls of the key service (create, list, revoke) over HTTP, as
 * key-service.md describes them, for the key CLI (against the embedded stand-in or a real key
 * service). Every refusal becomes a KeyManagementRefusal with a one-line message for a person.
 */

export interface KeyServiceTarget {
  readonly url: string;
  readonly token: string;
}

export interface Actor {
  readonly id: string;
  readonly permissions: readonly string[];
}

export class KeyManagementRefusal extends Error {
  override name = 'KeyManagementRefusal';
  /** `connectionRefused`: the connection was never made, so nothing happened. */
  constructor(
    message: string,
    readonly connectionRefused = false,
  ) {
    super(message);
  }
}

/** What a call is about, for the refusal's message. */
interface About {
  readonly organizationId: string;
  readonly keyId?: string;
}

const TIMEOUT_MS = 10_000;
const keysPath = (organizationId: string) => `/v1/organizations/${encodeURIComponent(organizationId)}/keys`;

export function createKey(
  target: KeyServiceTarget,
  actor: Actor,
  organizationId: string,
  request: { name: string; permissions: readonly string[]; expiresAt?: string },
): Promise<{ key: Key; plaintext: string }> {
  return call(target, actor, { organizationId }, 201, 'POST', keysPath(organizationId), request);
}

export async function listKeys(target: KeyServiceTarget, actor: Actor, organizationId: string): Promise<Key[]> {
  return (await call<{ keys: Key[] }>(target, actor, { organizationId }, 200, 'GET', keysPath(organizationId))).keys;
}

export async function revokeKey(target: KeyServiceTarget, actor: Actor, about: Required<About>): Promise<Key> {
  const path = `${keysPath(about.organizationId)}/${encodeURIComponent(about.keyId)}/revoke`;
  return (await call<{ key: Key }>(target, actor, about, 200, 'POST', path, {})).key;
}

/** The answer's body when its status is `expected`; any other answer is refused. */
async function call<T>(
  target: KeyServiceTarget,
  actor: Actor,
  about: About,
  expected: number,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
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
    // fetch wraps the system error (ECONNREFUSED...) in its cause.
    const code = errorCode(err) ?? errorCode((err as { cause?: unknown }).cause);
    const reason = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
    throw new KeyManagementRefusal(
      `the key service at ${target.url} is unreachable (${reason})`,
      code === 'ECONNREFUSED',
    );
  }
  const answer: unknown = await response.json().catch(() => null);
  if (response.status === expected) return answer as T;
  throw new KeyManagementRefusal(refusal(response, answer, actor, about));
}

/** The one line a person reads for each refusal the contract names. */
function refusal(response: Response, answer: unknown, actor: Actor, about: About): string {
  const { status } = response;
  if (status === 401) return 'the key service refused the service token (401): check KEY_SERVICE_TOKEN';
  if (status === 429 || status === 503) {
    const retryAfter = response.headers.get('retry-after');
    return `the key service is busy (${status})${retryAfter ? `; retry after ${retryAfter} s` : '; retry later'}`;
  }
  const { organizationId, keyId } = about;
  switch (typeof answer === 'object' && answer !== null ? (answer as { error?: unknown }).error : undefined) {
    case 'forbidden':
      return `forbidden: ${actor.id} does not hold the manage_api_keys permission`;
    case 'not_found':
      return keyId === undefined
        ? `not found: the key service knows no organization ${organizationId}`
        : `not found: organization ${organizationId} has no key ${keyId}`;
    case 'active_key_limit':
      return `active key limit: ${organizationId} already has ${ACTIVE_KEY_LIMIT} active keys; revoke one first`;
    case 'invalid_expiry':
      return `invalid expiry: a key must expire within 1 to ${MAX_LIFETIME_DAYS} days from now`;
    case 'invalid_request':
      return `invalid request: the name must be 1 to ${NAME_MAX_CHARACTERS} characters, the permissions a list`;
    default:
      return `unexpected answer from the key service: status ${status}`;
  }
}
