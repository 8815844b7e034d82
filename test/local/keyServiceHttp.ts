import type { Key, Organization } from '../../src/local/keyStore.js';
import { type LocalKeyService, startLocalKeyService } from '../../src/local/localKeyService.js';
import { type MutableClock, mutableClock } from '../support/mutableClock.js';
import { tempDir } from '../support/tempDir.js';

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
    ...(options.body === undefined
      ? {}
      : { body: typeof options.body === 'string' ? options.body : JSON.stringify(options.body) }),
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
  return callKeyService(service, 'POST', `/v1/organizations/${organizationId}/keys/${keyId}/revoke`, {
    body: {},
    headers,
  });
}

/** The local administration call (beyond the contract): change an organization's plan or ceiling. */
export function updateOrganizationCall(
  service: KeyServiceUnderTest,
  organizationId: string,
  changes: { plan?: string; ceiling?: number | null },
): Promise<RawAnswer> {
  return callKeyService(service, 'PATCH', `/v1/organizations/${organizationId}`, { body: changes });
}

export function verifyCall(
  service: KeyServiceUnderTest,
  keyHash: unknown,
): Promise<RawAnswer<{ key: Key; organization: Organization; error?: string }>> {
  return callKeyService(service, 'POST', '/v1/keys/verify', { body: { keyHash } });
}

/**
 * A local key service per test over a fresh data directory, with a clock the test
 * moves: the hooks every local key-service suite needs (network limited to loopback,
 * start before each test, close and clean up after it). A test may replace `service`
 * (afterEach closes whichever runs then) or call `restart()`.
 */
type TempDir = Awaited<ReturnType<typeof tempDir>>;

export class LocalKeyServiceFixture {
  readonly clock: MutableClock;
  service!: LocalKeyService;
  dir!: TempDir;

  constructor(
    private readonly dirPrefix: string,
    private readonly start: string,
    private readonly pingIntervalMs?: number,
  ) {
    this.clock = mutableClock(start);
  }

  /** Closes the running service and starts it again over the same data directory. */
  async restart(): Promise<void> {
    await this.service.close();
    this.service = await this.startService();
  }

  startService(): Promise<LocalKeyService> {
    return startLocalKeyService({
      dataDir: this.dir.path,
      now: this.clock.now,
      announce: false,
      ...(this.pingIntervalMs === undefined ? {} : { pingIntervalMs: this.pingIntervalMs }),
    });
  }

  /** Registers the suite's hooks; call once at the top of a describe(). */
  useHooks(): this {
    beforeEach(async () => {
      this.clock.set(this.start);
      this.dir = await tempDir(this.dirPrefix);
      this.service = await this.startService();
    });
    afterEach(async () => {
      await this.service.close();
      await this.dir.remove();
    });
    return this;
  }
}
