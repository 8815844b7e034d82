import { ACTIVE_KEY_LIMIT, type Key, MAX_LIFETIME_DAYS, NAME_MAX_CHARACTERS } from './keyStore.js';

/**
 * The organization-settings calls of the key service (create, list, revoke) over HTTP, as
 * key-service.md describes them. Every refusal becomes a KeyManagementRefusal with a
 * one-line message for a person.
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
  constructor(
    message: string,
    /** The connection was never made, so nothing happened. */
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
  const answer = await call(
    target,
    actor,
    'POST',
    `/v1/organizations/${encodeURIComponent(organizationId)}/keys`,
    request,
  );
  if (answer.status === 201) return answer.body as { key: Key; plaintext: string };
  throw refusal(answer, actor, { organizationId });
}

export async function listKeys(target: KeyServiceTarget, actor: Actor, organizationId: string): Promise<Key[]> {
  const answer = await call(target, actor, 'GET', `/v1/organizations/${encodeURIComponent(organizationId)}/keys`);
  if (answer.status === 200) return (answer.body as { keys: Key[] }).keys;
  throw refusal(answer, actor, { organizationId });
}

export async function revokeKey(
  target: KeyServiceTarget,
  actor: Actor,
  organizationId: string,
  keyId: string,
): Promise<Key> {
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

async function call(
  target: KeyServiceTarget,
  actor: Actor,
  method: string,
  path: string,
  body?: unknown,
): Promise<Answer> {
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

/** The one line a person reads for each refusal the contract names. */
const REFUSALS: Readonly<Record<string, (actor: Actor, about: { organizationId: string; keyId?: string }) => string>> =
  {
    forbidden: (actor) => `forbidden: ${actor.id} does not hold the manage_api_keys permission`,
    not_found: (_actor, about) =>
      about.keyId === undefined
        ? `not found: the key service knows no organization ${about.organizationId}`
        : `not found: organization ${about.organizationId} has no key ${about.keyId}`,
    active_key_limit: (_actor, about) =>
      `active key limit: ${about.organizationId} already has ${ACTIVE_KEY_LIMIT} active keys; revoke one before creating another`,
    invalid_expiry: () =>
      `invalid expiry: a key must expire after now and at most ${MAX_LIFETIME_DAYS} days from now (--expires-in-days 1 to ${MAX_LIFETIME_DAYS})`,
    invalid_request: () =>
      `invalid request: the name must be 1 to ${NAME_MAX_CHARACTERS} characters and the permissions a comma-separated list`,
  };

function refusal(
  answer: Answer,
  actor: Actor,
  about: { organizationId: string; keyId?: string },
): KeyManagementRefusal {
  if (answer.status === 401) {
    return new KeyManagementRefusal('the key service refused the service token (401): check KEY_SERVICE_TOKEN');
  }
  if (answer.status === 429 || answer.status === 503) {
    const wait = answer.retryAfter ? `; retry after ${answer.retryAfter} s` : '; retry later';
    return new KeyManagementRefusal(`the key service is busy (${answer.status})${wait}`);
  }
  const error =
    typeof answer.body === 'object' && answer.body !== null ? (answer.body as { error?: unknown }).error : undefined;
  const message = typeof error === 'string' && Object.hasOwn(REFUSALS, error) ? REFUSALS[error] : undefined;
  return new KeyManagementRefusal(
    message?.(actor, about) ?? `unexpected answer from the key service: status ${answer.status}`,
  );
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
