/**
 * The organizations and keys the local key service starts with. The plaintext keys are
 * fixed constants (valid checksums, see keyMaterial.ts) so `npm start`, the README and the
 * tests can use them; the data file still stores only their SHA-256 hashes.
 */

export interface SeedOrganization {
  readonly id: string;
  readonly name: string;
  readonly plan: string;
  /** null: no usage ceiling. */
  readonly ceiling: number | null;
  /** Usage already counted at the start of every period (the capped organization starts full). */
  readonly usedAtPeriodStart: number;
}

export const SEED_ORGANIZATIONS: readonly SeedOrganization[] = [
  { id: 'org_demo', name: 'Acme Demo Inc.', plan: 'pro', ceiling: 5_000_000, usedAtPeriodStart: 48_210 },
  { id: 'org_starter', name: 'Starter Shop Ltd.', plan: 'starter', ceiling: 10_000, usedAtPeriodStart: 120 },
  { id: 'org_capped', name: 'Capped Media GmbH', plan: 'pro', ceiling: 1_000, usedAtPeriodStart: 1_000 },
  { id: 'org_other', name: 'Other Brand Corp.', plan: 'enterprise', ceiling: null, usedAtPeriodStart: 0 },
  // A plan this gateway does not know yet: it must count as below pro.
  { id: 'org_legacy', name: 'Legacy Plan Co.', plan: 'legacy_team', ceiling: 50_000, usedAtPeriodStart: 10 },
];

/** The fixed plaintext keys of the seeded organizations (local use only). */
export const LOCAL_KEYS = {
  /** org_demo (pro), read: the key `npm start` prints. */
  demo: 'atl_DemoReadKeyForLocalOrgDemo0000014duUw8',
  /** org_demo, write only: lacks `read`. */
  demoWriteOnly: 'atl_DemoWritKeyForLocalOrgDemo000002493tJ0',
  /** org_demo, read, expired 30 days ago. */
  demoExpired: 'atl_DemoExpdKeyForLocalOrgDemo0000033rHkT1',
  /** org_demo, read, revoked. */
  demoRevoked: 'atl_DemoRevdKeyForLocalOrgDemo0000044fzeqD',
  /** org_starter: plan below pro. */
  starter: 'atl_StarterKeyForLocalOrgStarter00053cw8Vj',
  /** org_capped: pro, usage ceiling reached. */
  capped: 'atl_CappedKeyForLocalOrgCapped0000061QsF3G',
  /** org_other (enterprise, no ceiling): owns another acme.com. */
  other: 'atl_OtherEntKeyForLocalOrgOther000073gw56V',
  /** org_legacy: a plan unknown to the gateway. */
  legacy: 'atl_LegacyKeyForLocalOrgLegacy00000803zXoR',
} as const;

export type LocalKeyName = keyof typeof LOCAL_KEYS;

export interface SeedKey {
  readonly name: LocalKeyName;
  readonly id: string;
  readonly organizationId: string;
  readonly label: string;
  readonly permissions: readonly string[];
  readonly state: 'active' | 'expired' | 'revoked';
}

export const SEED_KEYS: readonly SeedKey[] = [
  {
    name: 'demo',
    id: 'key_LOCALDEMO00000000000000001',
    organizationId: 'org_demo',
    label: 'local demo',
    permissions: ['read'],
    state: 'active',
  },
  {
    name: 'demoWriteOnly',
    id: 'key_LOCALDEMO00000000000000002',
    organizationId: 'org_demo',
    label: 'local write only',
    permissions: ['write'],
    state: 'active',
  },
  {
    name: 'demoExpired',
    id: 'key_LOCALDEMO00000000000000003',
    organizationId: 'org_demo',
    label: 'local expired',
    permissions: ['read'],
    state: 'expired',
  },
  {
    name: 'demoRevoked',
    id: 'key_LOCALDEMO00000000000000004',
    organizationId: 'org_demo',
    label: 'local revoked',
    permissions: ['read'],
    state: 'revoked',
  },
  {
    name: 'starter',
    id: 'key_LOCALSTARTER00000000000005',
    organizationId: 'org_starter',
    label: 'local starter',
    permissions: ['read'],
    state: 'active',
  },
  {
    name: 'capped',
    id: 'key_LOCALCAPPED000000000000006',
    organizationId: 'org_capped',
    label: 'local capped',
    permissions: ['read'],
    state: 'active',
  },
  {
    name: 'other',
    id: 'key_LOCALOTHER0000000000000007',
    organizationId: 'org_other',
    label: 'local other',
    permissions: ['read'],
    state: 'active',
  },
  {
    name: 'legacy',
    id: 'key_LOCALLEGACY000000000000008',
    organizationId: 'org_legacy',
    label: 'local legacy',
    permissions: ['read'],
    state: 'active',
  },
];

/** The person the local seed and the CLI act as. */
export const LOCAL_OWNER_ID = 'usr_local_owner';
