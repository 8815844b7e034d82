import type { Key, Organization } from '../../src/local/keyStore.js';

/** Raw HTTP calls to a (local) key service, answering status and parsed body. */

export interface KeyServiceUnderTest {
  url: string;
  token: string;
}

export interface RawAnswer<T = unknown> {
  status: number;
  body: T;
  text: string;
}

export const OWNER = { 'x-actor-id': 'usr_19', 'x-actor-permissions': 'manage_api_keys,billing' };

export async function callKeyService<T = Record<string, unknown>>(
  service: KeyServiceUnderTest,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; token?: string | null } = {},
): Promise<RawAnswer<T>> {
  const token = options.token === undefined ? service.token : options.token;
  const response = await fetch(`${service.url}${path}`, {
    method,
    headers: {
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    ...(options.body === undefined ? {} : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
  });
  const text = await response.text();
  return { status: response.status, text, body: (text === '' ? null : JSON.parse(text)) as T };
}

export function createKeyCall(
  service: KeyServiceUnderTest,
  organizationId: string,
  body: unknown,
  headers: Record<string, string> = OWNER,
): Promise<RawAnswer<{ key: Key; plaintext: string; error?: string }>> {
  return callKeyService(service, 'POST', `/v1/organizations/${organizationId}/keys`, { body, headers });
}

export function listKeysCall(
  service: KeyServiceUnderTest,
  organizationId: string,
  headers: Record<string, string> = OWNER,
): Promise<RawAnswer<{ keys: Key[]; error?: string }>> {
  return callKeyService(service, 'GET', `/v1/organizations/${organizationId}/keys`, { headers });
}

export function revokeKeyCall(
  service: KeyServiceUnderTest,
  organizationId: string,
  keyId: string,
  headers: Record<string, string> = OWNER,
): Promise<RawAnswer<{ key: Key; error?: string }>> {
  return callKeyService(service, 'POST', `/v1/organizations/${organizationId}/keys/${keyId}/revoke`, { body: {}, headers });
}

export function verifyCall(
  service: KeyServiceUnderTest,
  keyHash: unknown,
): Promise<RawAnswer<{ key: Key; organization: Organization; error?: string }>> {
  return callKeyService(service, 'POST', '/v1/keys/verify', { body: { keyHash } });
}
