import { randomBytes } from 'node:crypto';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { BASE62_ALPHABET, keyChecksum } from '../auth/keyChecksum.js';
import { KEY_PREFIX_LENGTH, keyHashOf } from '../auth/keyFormat.js';
import { DATA_FILE_NAME, readIfExists, USAGE_LOG_NAME, writeFileAtomically } from './dataDirFiles.js';
import { LOCAL_KEYS, LOCAL_OWNER_ID, SEED_KEYS, SEED_ORGANIZATIONS } from './seedAccounts.js';

/**
 * The state and rules of the embedded stand-in for the key service (key-service.md; spec 3.1 and
 * 5.1). Keys are stored only as hashes; every change is on disk before its answer is given.
 */

export const DAY_MS = 86_400_000;
export const ACTIVE_KEY_LIMIT = 50;
export const MAX_LIFETIME_DAYS = 730;
export const NAME_MAX_CHARACTERS = 100;
const DEFAULT_LIFETIME_DAYS = 365;
/** Event ids are remembered this long for idempotency; retries come much sooner. */
const USAGE_ID_RETENTION_MS = 35 * DAY_MS;

const StoredKeySchema = z.object({
  id: z.string(),
  organizationId: z.string(),
  name: z.string(),
  prefix: z.string(),
  permissions: z.array(z.string()),
  createdAt: z.string(),
  createdBy: z.string(),
  expiresAt: z.string(),
  revokedAt: z.string().nullable(),
  revokedBy: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
  keyHash: z.string().regex(/^[0-9a-f]{64}$/),
});
type StoredKey = z.infer<typeof StoredKeySchema>;
const count = z.number().int().nonnegative();
const StoredOrganizationSchema = z.object({
  id: z.string(),
  plan: z.string(),
  ceiling: count.nullable(),
  usedAtPeriodStart: count,
  period: z.object({ start: z.string(), used: count }),
});
type StoredOrganization = z.infer<typeof StoredOrganizationSchema>;
const DataFileSchema = z.object({
  version: z.literal(1),
  organizations: z.array(StoredOrganizationSchema),
  keys: z.array(StoredKeySchema),
});

/** A key as the contract shows it: the stored record without its hash. */
export type Key = Omit<StoredKey, 'keyHash'>;

/** An organization as verify returns it. */
export type Organization = ReturnType<typeof publicOrganization>;

/** A usage event as the contract has it; `at` already checked to be an RFC 3339 date-time. */
export type UsageEvent = { id: string; keyId: string; organizationId: string; at: string };

/** The changes that make a cached verification stale, announced on the event stream. */
export type KeyEventType = 'key.revoked' | 'organization.updated';
type Emit = (type: KeyEventType, data: Record<string, unknown>) => void;

export class DataFileInvalid extends Error {
  override name = 'DataFileInvalid';
  constructor(path: string, detail: string) {
    super(`the local data file ${path} is not valid (${detail}); move it away to start with fresh seed data`);
  }
}

export class KeyStore {
  private readonly organizations: Map<string, StoredOrganization>;
  private readonly keysByHash: Map<string, StoredKey>;
  private writing: Promise<void> = Promise.resolve();
  private writeQueued: Promise<void> | null = null;

  private constructor(
    private readonly dataDir: string,
    organizations: StoredOrganization[],
    private readonly keys: StoredKey[],
    /** Usage event id → when it was first received (ms). */
    private readonly usageIds: Map<string, number>,
    private readonly now: () => Date,
    private readonly emit: Emit,
  ) {
    this.organizations = new Map(organizations.map((org) => [org.id, org]));
    this.keysByHash = new Map(keys.map((key) => [key.keyHash, key]));
  }

  /** Opens the data in `dataDir` (made and locked by the caller) or starts empty; adds any missing seed; saves. */
  static async open(dataDir: string, now: () => Date, emit: Emit): Promise<KeyStore> {
    const path = join(dataDir, DATA_FILE_NAME);
    const text = (await readIfExists(path)) ?? '{ "version": 1, "organizations": [], "keys": [] }';
    let data: z.infer<typeof DataFileSchema>;
    try {
      data = DataFileSchema.parse(JSON.parse(text));
    } catch (err: unknown) {
      throw new DataFileInvalid(path, err instanceof z.ZodError ? (err.issues[0]?.message ?? '') : 'not JSON');
    }
    // The usage log: one `<received ms> <event id>` line per event; ids past the retention are dropped.
    const usageIds = new Map<string, number>();
    for (const line of ((await readIfExists(join(dataDir, USAGE_LOG_NAME))) ?? '').split('\n')) {
      const [ms, id] = line.split(' ');
      const receivedMs = Number(ms);
      if (id && now().getTime() - receivedMs <= USAGE_ID_RETENTION_MS) usageIds.set(id, receivedMs);
    }
    const store = new KeyStore(dataDir, data.organizations, data.keys, usageIds, now, emit);
    store.addMissingSeed();
    await writeFileAtomically(join(dataDir, USAGE_LOG_NAME), usageLines(usageIds));
    await store.save();
    return store;
  }

  /** The key with this hash and its organization; expired and revoked keys included. */
  verify(keyHash: string): { key: Key; organization: Organization } | null {
    const key = this.keysByHash.get(keyHash);
    const organization = key && this.organizations.get(key.organizationId);
    if (!key || !organization) return null;
    return { key: publicKey(key), organization: publicOrganization(organization, this.now()) };
  }

  /** Counts each event id once, ever (within the retention), toward its organization's period. */
  async recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }> {
    const receivedMs = this.now().getTime();
    const fresh = new Map<string, number>();
    for (const event of events) {
      if (this.usageIds.has(event.id)) continue;
      this.usageIds.set(event.id, receivedMs);
      fresh.set(event.id, receivedMs);
      const organization = this.organizations.get(event.organizationId);
      if (organization) currentPeriod(organization, this.now()).used += 1;
      const key = this.findKey(event.organizationId, event.keyId);
      const at = iso(Date.parse(event.at));
      if (key && (key.lastUsedAt === null || Date.parse(key.lastUsedAt) < Date.parse(at))) key.lastUsedAt = at;
    }
    if (fresh.size > 0) {
      await appendFile(join(this.dataDir, USAGE_LOG_NAME), usageLines(fresh), { mode: 0o600 });
      await this.save();
    }
    return { accepted: fresh.size, duplicates: events.length - fresh.size };
  }

  hasOrganization(organizationId: string): boolean {
    return this.organizations.has(organizationId);
  }

  async createKey(
    organizationId: string,
    actorId: string,
    /** `expiresAt` in ms: null for the default lifetime, NaN for text that is not a date-time. */
    request: { name: string; permissions: readonly string[]; expiresAt: number | null },
  ): Promise<{ key: Key; plaintext: string } | { error: 'invalid_expiry' | 'active_key_limit' }> {
    const nowMs = this.now().getTime();
    const expiresAtMs = request.expiresAt ?? nowMs + DEFAULT_LIFETIME_DAYS * DAY_MS;
    if (!(expiresAtMs > nowMs) || expiresAtMs - nowMs > MAX_LIFETIME_DAYS * DAY_MS) return { error: 'invalid_expiry' };
    const active = this.keys.filter((key) => key.organizationId === organizationId && isActive(key, nowMs));
    if (active.length >= ACTIVE_KEY_LIMIT) return { error: 'active_key_limit' };

    let plaintext = newPlaintextKey();
    while (this.keysByHash.has(keyHashOf(plaintext))) plaintext = newPlaintextKey();
    const key = this.addKey(plaintext, {
      id: newKeyId(nowMs),
      organizationId,
      name: request.name,
      permissions: [...new Set(request.permissions)],
      createdAt: iso(nowMs),
      createdBy: actorId,
      expiresAt: iso(expiresAtMs),
    });
    await this.save();
    return { key: publicKey(key), plaintext };
  }

  /** Every key of the organization, newest first (the later created on a tie); null for an unknown organization. */
  listKeys(organizationId: string): Key[] | null {
    if (!this.organizations.has(organizationId)) return null;
    return this.keys
      .filter((key) => key.organizationId === organizationId)
      .reverse()
      .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt))
      .map(publicKey);
  }

  /** Revokes now; a revoked key is answered unchanged. null: no such key in that organization. */
  async revokeKey(organizationId: string, keyId: string, actorId: string): Promise<Key | null> {
    const key = this.findKey(organizationId, keyId);
    if (!key || !this.organizations.has(organizationId)) return null;
    if (key.revokedAt === null) {
      key.revokedAt = this.now().toISOString();
      key.revokedBy = actorId;
      this.emit('key.revoked', { keyId: key.id, keyHash: key.keyHash, organizationId, revokedAt: key.revokedAt });
      await this.save();
    }
    return publicKey(key);
  }

  /** Changes plan and/or ceiling (local administration, outside the contract) and announces it. */
  async updateOrganization(organizationId: string, changes: { plan?: string; ceiling?: number | null }) {
    const organization = this.organizations.get(organizationId);
    if (!organization) return null;
    organization.plan = changes.plan ?? organization.plan;
    if (changes.ceiling !== undefined) organization.ceiling = changes.ceiling;
    this.emit('organization.updated', { organizationId });
    await this.save();
    return publicOrganization(organization, this.now());
  }

  /** Resolves once every change made so far is on disk. */
  save(): Promise<void> {
    // One write at a time; changes made while one runs share the next write.
    this.writeQueued ??= this.writing.then(() => {
      this.writeQueued = null;
      const data = { version: 1, organizations: [...this.organizations.values()], keys: this.keys };
      return writeFileAtomically(join(this.dataDir, DATA_FILE_NAME), `${JSON.stringify(data, null, 2)}\n`);
    });
    this.writing = this.writeQueued.catch(() => undefined);
    return this.writeQueued;
  }

  private findKey(organizationId: string, keyId: string): StoredKey | undefined {
    return this.keys.find((key) => key.id === keyId && key.organizationId === organizationId);
  }

  /** A new key, neither revoked nor used yet. */
  private addKey(plaintext: string, fields: Omit<Key, 'prefix' | 'revokedAt' | 'revokedBy' | 'lastUsedAt'>): StoredKey {
    const { id, organizationId, name, ...rest } = fields;
    const prefix = plaintext.slice(0, KEY_PREFIX_LENGTH);
    const unused = { revokedAt: null, revokedBy: null, lastUsedAt: null };
    const key = { id, organizationId, name, prefix, ...rest, ...unused, keyHash: keyHashOf(plaintext) };
    this.keys.push(key);
    this.keysByHash.set(key.keyHash, key);
    return key;
  }

  private addMissingSeed(): void {
    const nowMs = this.now().getTime();
    for (const { id, plan, ceiling, usedAtPeriodStart } of SEED_ORGANIZATIONS) {
      if (this.organizations.has(id)) continue;
      const organization = { id, plan, ceiling, usedAtPeriodStart, period: { start: '', used: 0 } };
      currentPeriod(organization, this.now());
      this.organizations.set(id, organization);
    }
    for (const [plaintextName, id, organizationId, name, permission, state] of SEED_KEYS) {
      const plaintext = LOCAL_KEYS[plaintextName];
      if (this.keysByHash.has(keyHashOf(plaintext)) || this.keys.some((key) => key.id === id)) continue;
      const createdMs = nowMs - { active: 0, expired: 400, revoked: 60 }[state] * DAY_MS;
      const key = this.addKey(plaintext, {
        id,
        organizationId,
        name,
        permissions: [permission],
        createdAt: iso(createdMs),
        createdBy: LOCAL_OWNER_ID,
        expiresAt: iso(state === 'expired' ? nowMs - 30 * DAY_MS : createdMs + MAX_LIFETIME_DAYS * DAY_MS),
      });
      if (state === 'revoked') Object.assign(key, { revokedAt: iso(nowMs - DAY_MS), revokedBy: LOCAL_OWNER_ID });
    }
  }
}

function publicOrganization(organization: StoredOrganization, now: Date) {
  const { start, used } = currentPeriod(organization, now);
  const startDate = new Date(start);
  const periodEnd = iso(Date.UTC(startDate.getUTCFullYear(), startDate.getUTCMonth() + 1, 1));
  const { id, plan, ceiling } = organization;
  return { id, plan, usage: { periodStart: start, periodEnd, used, ceiling } };
}

/** The calendar month (UTC) of now; a new month starts from the organization's baseline. */
function currentPeriod(organization: StoredOrganization, now: Date): StoredOrganization['period'] {
  const start = iso(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  if (organization.period.start !== start) organization.period = { start, used: organization.usedAtPeriodStart };
  return organization.period;
}

export function isActive(key: Pick<Key, 'revokedAt' | 'expiresAt'>, nowMs: number): boolean {
  return key.revokedAt === null && Date.parse(key.expiresAt) > nowMs;
}

function publicKey({ keyHash: _hash, ...key }: StoredKey): Key {
  return { ...key, permissions: [...key.permissions] };
}

const iso = (ms: number): string => new Date(ms).toISOString();

const usageLines = (ids: ReadonlyMap<string, number>) => [...ids].map(([id, ms]) => `${ms} ${id}\n`).join('');

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `key_` + a ULID: 10 Crockford base32 characters of time, 16 of randomness. */
function newKeyId(nowMs: number): string {
  const time = Array.from({ length: 10 }, (_, i) => CROCKFORD[Math.floor(nowMs / 32 ** (9 - i)) % 32]).join('');
  return `key_${time}${[...randomBytes(16)].map((byte) => CROCKFORD[byte % 32]).join('')}`;
}

/**
 * `atl_` + 32 uniformly random base62 characters + their checksum, made with the gateway's own
 * checksum code (src/auth) so the two sides cannot disagree about the format.
 */
export function newPlaintextKey(): string {
  let randomPart = '';
  while (randomPart.length < 32) {
    for (const byte of randomBytes(48)) {
      // 248 = 4 × 62: bytes at or above it would favour the first characters.
      if (byte < 248 && randomPart.length < 32) randomPart += BASE62_ALPHABET[byte % 62];
    }
  }
  return `atl_${randomPart}${keyChecksum(randomPart)}`;
}
