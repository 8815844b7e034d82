import { randomBytes } from 'node:crypto';
import { appendFile, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { DATA_FILE_NAME, isCode, USAGE_LOG_NAME, writeFileAtomically } from './dataDirFiles.js';
import { DAY_MS } from './dateText.js';
import { keyHashOf, keyPrefixOf, newPlaintextKey } from './keyMaterial.js';
import { LOCAL_KEYS, LOCAL_OWNER_ID, SEED_KEYS, SEED_ORGANIZATIONS, type SeedKey } from './seedAccounts.js';

/**
 * The local key service's state and rules (key-service.md; spec 3.1 and 5.1): keys stored
 * only as hashes, at most 50 active keys per organization, expiry 365 days by default and
 * at most 730, revoke immediate and idempotent with the record kept, usage counted once per
 * event id. Every change is on disk (temp file + rename) before its answer is given.
 */

export const ACTIVE_KEY_LIMIT = 50;
export const DEFAULT_LIFETIME_MS = 365 * DAY_MS;
export const MAX_LIFETIME_DAYS = 730;
export const MAX_LIFETIME_MS = MAX_LIFETIME_DAYS * DAY_MS;
export const NAME_MAX_CHARACTERS = 100;
/** Event ids are remembered this long for idempotency; retries come much sooner. */
const USAGE_ID_RETENTION_MS = 35 * DAY_MS;

/** A key as the contract shows it: the stored record without its hash. */
export type Key = Omit<StoredKey, 'keyHash'>;

/** An organization as verify returns it. */
export interface Organization {
  id: string;
  plan: string;
  usage: { periodStart: string; periodEnd: string; used: number; ceiling: number | null };
}

export interface UsageEvent {
  id: string;
  keyId: string;
  organizationId: string;
  route: string;
  /** Already checked to be an RFC 3339 date-time. */
  at: string;
}

export type KeyEventSink = (type: 'key.revoked' | 'organization.updated', data: Record<string, unknown>) => void;

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

const StoredOrganizationSchema = z.object({
  id: z.string(),
  plan: z.string(),
  ceiling: z.number().int().nonnegative().nullable(),
  usedAtPeriodStart: z.number().int().nonnegative(),
  period: z.object({ start: z.string(), used: z.number().int().nonnegative() }),
});
type StoredOrganization = z.infer<typeof StoredOrganizationSchema>;

const DataFileSchema = z.object({
  version: z.literal(1),
  organizations: z.array(StoredOrganizationSchema),
  keys: z.array(StoredKeySchema),
});
type DataFile = z.infer<typeof DataFileSchema>;

export class DataFileInvalid extends Error {
  constructor(path: string, detail: string) {
    super(`the local data file ${path} is not valid (${detail}); move it away to start with fresh seed data`);
    this.name = 'DataFileInvalid';
  }
}

export type CreateKeyResult =
  | { ok: true; key: Key; plaintext: string }
  | { ok: false; error: 'not_found' | 'invalid_expiry' | 'active_key_limit' };

export class KeyStore {
  private readonly organizations: Map<string, StoredOrganization>;
  private readonly keys: StoredKey[];
  private readonly keysByHash = new Map<string, StoredKey>();
  /** Usage event id → when it was first received (ms). */
  private readonly usageIds: Map<string, number>;
  private writing: Promise<void> = Promise.resolve();
  private writeQueued: Promise<void> | null = null;

  private constructor(
    private readonly dataDir: string,
    data: DataFile,
    usageIds: Map<string, number>,
    private readonly now: () => Date,
    private readonly emit: KeyEventSink,
  ) {
    this.organizations = new Map(data.organizations.map((org) => [org.id, org]));
    this.keys = data.keys;
    for (const key of this.keys) this.keysByHash.set(key.keyHash, key);
    this.usageIds = usageIds;
  }

  /** Opens the data in `dataDir` (or starts empty), adds any missing seed organization and key, and saves. */
  static async open(dataDir: string, now: () => Date, emit: KeyEventSink): Promise<KeyStore> {
    await mkdir(dataDir, { recursive: true });
    const path = join(dataDir, DATA_FILE_NAME);
    let data: DataFile = { version: 1, organizations: [], keys: [] };
    let text: string | null = null;
    try {
      text = await readFile(path, 'utf8');
    } catch (err: unknown) {
      if (!isCode(err, 'ENOENT')) throw err;
    }
    if (text !== null) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new DataFileInvalid(path, 'not JSON');
      }
      const parsed = DataFileSchema.safeParse(json);
      if (!parsed.success) throw new DataFileInvalid(path, parsed.error.issues[0]?.message ?? 'unexpected shape');
      data = parsed.data;
    }
    const store = new KeyStore(dataDir, data, await readUsageIds(dataDir, now().getTime()), now, emit);
    store.addMissingSeed();
    await store.compactUsageLog();
    await store.save();
    return store;
  }

  /** The key with this hash and its organization; expired and revoked keys included. */
  verify(keyHash: string): { key: Key; organization: Organization } | null {
    const key = this.keysByHash.get(keyHash);
    const organization = key ? this.organizations.get(key.organizationId) : undefined;
    if (!key || !organization) return null;
    return { key: publicKey(key), organization: this.publicOrganization(organization) };
  }

  /** Counts each event id once, ever (within the retention), toward its organization's period. */
  async recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }> {
    const receivedMs = this.now().getTime();
    let accepted = 0;
    const fresh: string[] = [];
    for (const event of events) {
      if (this.usageIds.has(event.id)) continue;
      this.usageIds.set(event.id, receivedMs);
      fresh.push(event.id);
      accepted += 1;
      const organization = this.organizations.get(event.organizationId);
      if (organization) this.currentPeriod(organization).used += 1;
      const key = this.keys.find((k) => k.id === event.keyId && k.organizationId === event.organizationId);
      const atIso = new Date(Date.parse(event.at)).toISOString();
      if (key && (key.lastUsedAt === null || Date.parse(key.lastUsedAt) < Date.parse(atIso))) key.lastUsedAt = atIso;
    }
    if (fresh.length > 0) {
      await appendFile(join(this.dataDir, USAGE_LOG_NAME), fresh.map((id) => `${receivedMs} ${id}\n`).join(''), {
        mode: 0o600,
      });
      await this.save();
    }
    return { accepted, duplicates: events.length - accepted };
  }

  hasOrganization(organizationId: string): boolean {
    return this.organizations.has(organizationId);
  }

  async createKey(
    organizationId: string,
    actorId: string,
    request: { name: string; permissions: readonly string[]; expiresAtMs: number | null },
  ): Promise<CreateKeyResult> {
    if (!this.organizations.has(organizationId)) return { ok: false, error: 'not_found' };
    const nowMs = this.now().getTime();
    const expiresAtMs = request.expiresAtMs ?? nowMs + DEFAULT_LIFETIME_MS;
    if (!(expiresAtMs > nowMs) || expiresAtMs - nowMs > MAX_LIFETIME_MS) return { ok: false, error: 'invalid_expiry' };
    const active = this.keys.filter((key) => key.organizationId === organizationId && isActive(key, nowMs)).length;
    if (active >= ACTIVE_KEY_LIMIT) return { ok: false, error: 'active_key_limit' };

    let plaintext = newPlaintextKey();
    while (this.keysByHash.has(keyHashOf(plaintext))) plaintext = newPlaintextKey();
    const key: StoredKey = {
      id: newKeyId(nowMs),
      organizationId,
      name: request.name,
      prefix: keyPrefixOf(plaintext),
      permissions: [...new Set(request.permissions)],
      createdAt: new Date(nowMs).toISOString(),
      createdBy: actorId,
      expiresAt: new Date(expiresAtMs).toISOString(),
      revokedAt: null,
      revokedBy: null,
      lastUsedAt: null,
      keyHash: keyHashOf(plaintext),
    };
    this.keys.push(key);
    this.keysByHash.set(key.keyHash, key);
    await this.save();
    return { ok: true, key: publicKey(key), plaintext };
  }

  /** Every key of the organization, newest first; null for an unknown organization. */
  listKeys(organizationId: string): Key[] | null {
    if (!this.organizations.has(organizationId)) return null;
    return this.keys
      .map((key, index) => ({ key, index }))
      .filter(({ key }) => key.organizationId === organizationId)
      .sort((a, b) => Date.parse(b.key.createdAt) - Date.parse(a.key.createdAt) || b.index - a.index)
      .map(({ key }) => publicKey(key));
  }

  /** Revokes now; a revoked key is answered unchanged. null: no such key in that organization. */
  async revokeKey(organizationId: string, keyId: string, actorId: string): Promise<Key | null> {
    const key = this.keys.find((k) => k.id === keyId && k.organizationId === organizationId);
    if (!key || !this.organizations.has(organizationId)) return null;
    if (key.revokedAt !== null) return publicKey(key);
    key.revokedAt = this.now().toISOString();
    key.revokedBy = actorId;
    this.emit('key.revoked', { keyId: key.id, keyHash: key.keyHash, organizationId, revokedAt: key.revokedAt });
    await this.save();
    return publicKey(key);
  }

  /** Changes plan and/or ceiling (local administration, outside the contract) and announces it. */
  async updateOrganization(
    organizationId: string,
    changes: { plan?: string; ceiling?: number | null },
  ): Promise<Organization | null> {
    const organization = this.organizations.get(organizationId);
    if (!organization) return null;
    if (changes.plan !== undefined) organization.plan = changes.plan;
    if (changes.ceiling !== undefined) organization.ceiling = changes.ceiling;
    this.emit('organization.updated', { organizationId });
    await this.save();
    return this.publicOrganization(organization);
  }

  /** Resolves once every change made so far is on disk. */
  save(): Promise<void> {
    // One write at a time; changes made while one runs share the next write.
    if (this.writeQueued) return this.writeQueued;
    const queued = this.writing.then(async () => {
      this.writeQueued = null;
      await writeFileAtomically(join(this.dataDir, DATA_FILE_NAME), this.serialize());
    });
    this.writeQueued = queued;
    this.writing = queued.catch(() => undefined);
    return queued;
  }

  private serialize(): string {
    const data: DataFile = { version: 1, organizations: [...this.organizations.values()], keys: this.keys };
    return `${JSON.stringify(data, null, 2)}\n`;
  }

  private publicOrganization(organization: StoredOrganization): Organization {
    const period = this.currentPeriod(organization);
    const start = new Date(period.start);
    return {
      id: organization.id,
      plan: organization.plan,
      usage: {
        periodStart: period.start,
        periodEnd: new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1)).toISOString(),
        used: period.used,
        ceiling: organization.ceiling,
      },
    };
  }

  /** The calendar month (UTC) of now; a new month starts from the organization's baseline. */
  private currentPeriod(organization: StoredOrganization): StoredOrganization['period'] {
    const now = this.now();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString();
    if (organization.period.start !== start) organization.period = { start, used: organization.usedAtPeriodStart };
    return organization.period;
  }

  private addMissingSeed(): void {
    const nowMs = this.now().getTime();
    for (const seed of SEED_ORGANIZATIONS) {
      if (this.organizations.has(seed.id)) continue;
      const organization: StoredOrganization = {
        id: seed.id,
        plan: seed.plan,
        ceiling: seed.ceiling,
        usedAtPeriodStart: seed.usedAtPeriodStart,
        period: { start: '', used: 0 },
      };
      this.currentPeriod(organization);
      this.organizations.set(seed.id, organization);
    }
    for (const seed of SEED_KEYS) {
      const plaintext = LOCAL_KEYS[seed.name];
      if (this.keysByHash.has(keyHashOf(plaintext)) || this.keys.some((key) => key.id === seed.id)) continue;
      const key = seedKey(seed, plaintext, nowMs);
      this.keys.push(key);
      this.keysByHash.set(key.keyHash, key);
    }
  }

  private async compactUsageLog(): Promise<void> {
    const lines = [...this.usageIds].map(([id, ms]) => `${ms} ${id}\n`).join('');
    await writeFileAtomically(join(this.dataDir, USAGE_LOG_NAME), lines);
  }
}

export function isActive(key: Pick<Key, 'revokedAt' | 'expiresAt'>, nowMs: number): boolean {
  return key.revokedAt === null && Date.parse(key.expiresAt) > nowMs;
}

function publicKey(key: StoredKey): Key {
  const { keyHash: _hash, ...rest } = key;
  return { ...rest, permissions: [...rest.permissions] };
}

function seedKey(seed: SeedKey, plaintext: string, nowMs: number): StoredKey {
  const createdMs =
    seed.state === 'expired' ? nowMs - 400 * DAY_MS : seed.state === 'revoked' ? nowMs - 60 * DAY_MS : nowMs;
  const expiresMs = seed.state === 'expired' ? nowMs - 30 * DAY_MS : createdMs + MAX_LIFETIME_MS;
  return {
    id: seed.id,
    organizationId: seed.organizationId,
    name: seed.label,
    prefix: keyPrefixOf(plaintext),
    permissions: [...seed.permissions],
    createdAt: new Date(createdMs).toISOString(),
    createdBy: LOCAL_OWNER_ID,
    expiresAt: new Date(expiresMs).toISOString(),
    revokedAt: seed.state === 'revoked' ? new Date(nowMs - DAY_MS).toISOString() : null,
    revokedBy: seed.state === 'revoked' ? LOCAL_OWNER_ID : null,
    lastUsedAt: null,
    keyHash: keyHashOf(plaintext),
  };
}

/** The usage-event ids still within the retention, from the append-only log. */
async function readUsageIds(dataDir: string, nowMs: number): Promise<Map<string, number>> {
  const ids = new Map<string, number>();
  let text = '';
  try {
    text = await readFile(join(dataDir, USAGE_LOG_NAME), 'utf8');
  } catch (err: unknown) {
    if (!isCode(err, 'ENOENT')) throw err;
  }
  for (const line of text.split('\n')) {
    const [ms, id] = line.split(' ');
    const receivedMs = Number(ms);
    if (id && Number.isFinite(receivedMs) && nowMs - receivedMs <= USAGE_ID_RETENTION_MS) ids.set(id, receivedMs);
  }
  return ids;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** `key_` + a ULID: 10 characters of time, 16 of randomness. */
function newKeyId(nowMs: number): string {
  let time = '';
  let rest = nowMs;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[rest % 32] + time;
    rest = Math.floor(rest / 32);
  }
  const random = [...randomBytes(16)].map((byte) => CROCKFORD[byte % 32]).join('');
  return `key_${time}${random}`;
}
