import { createHash } from 'node:crypto';
import { BASE62_ALPHABET, keyChecksum } from '../../src/auth/keyChecksum.js';
import { KEY_PREFIX_LENGTH, keyHashOf } from '../../src/auth/keyFormat.js';
import type { Key as KeyJson, Organization as OrganizationJson } from '../../src/local/keyStore.js';

/**
 * API keys for tests: well-formed, with correct checksums, derived from a seed so a test
 * names its keys ("org-a reader") and gets the same text every run. Plus the key
 * service's answers about them, in wire form (JSON, times as strings).
 */

export { keyHashOf };

/** A valid key (`atl_` + 32 base62 + checksum) derived from `seed`. */
export function testKey(seed: string): string {
  const digest = createHash('sha256').update(`test key ${seed}`).digest();
  let randomPart = '';
  for (let i = 0; i < 32; i++) randomPart += BASE62_ALPHABET.charAt((digest[i] ?? 0) % 62);
  return `atl_${randomPart}${keyChecksum(randomPart)}`;
}

/** The same key with its last checksum character changed: right form, wrong checksum. */
export function withBadChecksum(key: string): string {
  const last = key.slice(-1);
  return key.slice(0, -1) + (last === '0' ? '1' : '0');
}

export function keyPrefixOf(key: string): string {
  return key.slice(0, KEY_PREFIX_LENGTH);
}

/** The key service's wire shapes (key-service.md "Records"), as the local key service writes them. */
export type { Key as KeyJson, Organization as OrganizationJson } from '../../src/local/keyStore.js';

/** `POST /v1/keys/verify` 200 body. */
export interface VerifyAnswerJson {
  key: KeyJson;
  organization: OrganizationJson;
}

export interface VerifyAnswerOverrides {
  key?: Partial<KeyJson>;
  organization?: Partial<Omit<OrganizationJson, 'usage'>>;
  usage?: Partial<OrganizationJson['usage']>;
}

/**
 * The key service's answer for `key`: by default an active `read` key of org_a on the
 * pro plan, 10 used of a 1000 ceiling, expiring 2027-01-10 (after FIXED_NOW).
 */
export function verifyAnswer(key: string, overrides: VerifyAnswerOverrides = {}): VerifyAnswerJson {
  const organizationId = overrides.key?.organizationId ?? overrides.organization?.id ?? 'org_a';
  return {
    key: {
      id: `key_${createHash('sha256').update(key).digest('hex').slice(0, 12)}`,
      organizationId,
      name: 'test key',
      prefix: keyPrefixOf(key),
      permissions: ['read'],
      createdAt: '2026-01-10T09:00:00.000Z',
      createdBy: 'usr_1',
      expiresAt: '2027-01-10T09:00:00.000Z',
      revokedAt: null,
      revokedBy: null,
      lastUsedAt: null,
      ...overrides.key,
    },
    organization: {
      id: organizationId,
      plan: 'pro',
      ...overrides.organization,
      usage: {
        periodStart: '2026-11-01T00:00:00.000Z',
        periodEnd: '2026-12-01T00:00:00.000Z',
        used: 10,
        ceiling: 1000,
        ...overrides.usage,
      },
    },
  };
}
