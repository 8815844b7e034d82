/**
 * The organizations and keys the embedded stand-in starts with. The plaintext keys are fixed so
 * `npm start`, the README and the tests can use them; the data file stores only their hashes.
 */

/** `ceiling` null: none; `usedAtPeriodStart`: usage already counted when a period starts (capped starts full). */
export const SEED_ORGANIZATIONS = [
  { id: 'org_demo', name: 'Acme Demo Inc.', plan: 'pro', ceiling: 5_000_000, usedAtPeriodStart: 48_210 },
  { id: 'org_starter', name: 'Starter Shop Ltd.', plan: 'starter', ceiling: 10_000, usedAtPeriodStart: 120 },
  { id: 'org_capped', name: 'Capped Media GmbH', plan: 'pro', ceiling: 1_000, usedAtPeriodStart: 1_000 },
  { id: 'org_other', name: 'Other Brand Corp.', plan: 'enterprise', ceiling: null, usedAtPeriodStart: 0 },
  // A plan this gateway does not know yet: it must count as below pro.
  { id: 'org_legacy', name: 'Legacy Plan Co.', plan: 'legacy_team', ceiling: 50_000, usedAtPeriodStart: 10 },
];

/** The fixed plaintext keys of the seeded organizations (local use only); SEED_KEYS says what each is. */
export const LOCAL_KEYS = {
  demo: 'atl_DemoReadKeyForLocalOrgDemo0000014duUw8',
  demoWriteOnly: 'atl_DemoWritKeyForLocalOrgDemo000002493tJ0',
  demoExpired: 'atl_DemoExpdKeyForLocalOrgDemo0000033rHkT1',
  demoRevoked: 'atl_DemoRevdKeyForLocalOrgDemo0000044fzeqD',
  starter: 'atl_StarterKeyForLocalOrgStarter00053cw8Vj',
  capped: 'atl_CappedKeyForLocalOrgCapped0000061QsF3G',
  other: 'atl_OtherEntKeyForLocalOrgOther000073gw56V',
  legacy: 'atl_LegacyKeyForLocalOrgLegacy00000803zXoR',
} as const;

/** [name in LOCAL_KEYS, id, organization, name, permission, state]: expired 30 days ago, revoked a day ago. */
export const SEED_KEYS = [
  // The key `npm start` prints; then one without `read`, one expired and one revoked.
  ['demo', 'key_LOCALDEMO00000000000000001', 'org_demo', 'local demo', 'read', 'active'],
  ['demoWriteOnly', 'key_LOCALDEMO00000000000000002', 'org_demo', 'local write only', 'write', 'active'],
  ['demoExpired', 'key_LOCALDEMO00000000000000003', 'org_demo', 'local expired', 'read', 'expired'],
  ['demoRevoked', 'key_LOCALDEMO00000000000000004', 'org_demo', 'local revoked', 'read', 'revoked'],
  // One key for each other organization: below pro, at its ceiling, another acme.com, an unknown plan.
  ['starter', 'key_LOCALSTARTER00000000000005', 'org_starter', 'local starter', 'read', 'active'],
  ['capped', 'key_LOCALCAPPED000000000000006', 'org_capped', 'local capped', 'read', 'active'],
  ['other', 'key_LOCALOTHER0000000000000007', 'org_other', 'local other', 'read', 'active'],
  ['legacy', 'key_LOCALLEGACY000000000000008', 'org_legacy', 'local legacy', 'read', 'active'],
] as const;

/** The person the local seed and the CLI act as. */
export const LOCAL_OWNER_ID = 'usr_local_owner';
