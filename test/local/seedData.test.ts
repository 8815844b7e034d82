import assert from 'node:assert/strict';
import { SEED_KEYS, SEED_ORGANIZATIONS } from '../../src/local/seedAccounts.js';
import type { SiteRecord } from '../../src/local/seedData.js';
import { seedPlatformData } from '../../src/local/seedData.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const DAY = 86_400_000;

function site(organizationId: string, domain: string, now = NOW): SiteRecord {
  const found = seedPlatformData(now)
    .organizations.get(organizationId)
    ?.sites.find((s) => s.domain === domain);
  assert.ok(found, `${organizationId} has ${domain}`);
  return found;
}

function allDateTimes(record: SiteRecord): string[] {
  return [
    record.createdAt,
    ...record.keywords.map((k) => k.createdAt),
    ...(record.aiVisibility
      ? [record.aiVisibility.createdAt, ...record.aiVisibility.rollups.map((r) => r.computedAt)]
      : []),
    ...record.auditRuns.flatMap((run) => [run.startedAt, ...(run.completedAt ? [run.completedAt] : [])]),
  ];
}

describe('local seed data', () => {
  it('is the same on every run for the same day, and moves with the clock', () => {
    assert.deepEqual(seedPlatformData(NOW), seedPlatformData(new Date(NOW)));
    const tomorrow = site('org_demo', 'acme.com', new Date(NOW.getTime() + DAY));
    const today = site('org_demo', 'acme.com');
    assert.equal(tomorrow.rankChecks.at(-1)?.date, '2026-11-22');
    assert.equal(today.rankChecks.at(-1)?.date, '2026-11-21');
    assert.deepEqual(
      tomorrow.keywords.map((k) => [k.keyword, k.position]),
      today.keywords.map((k) => [k.keyword, k.position]),
    );
  });

  it('has every seeded organization on both sides: plans below pro, at the ceiling, and unknown', () => {
    const platform = seedPlatformData(NOW);
    assert.deepEqual([...platform.organizations.keys()].sort(), SEED_ORGANIZATIONS.map((o) => o.id).sort());
    const byId = new Map(SEED_ORGANIZATIONS.map((o) => [o.id, o]));
    assert.equal(byId.get('org_demo')?.plan, 'pro');
    assert.equal(byId.get('org_starter')?.plan, 'starter');
    const capped = byId.get('org_capped');
    assert.ok(capped && capped.ceiling !== null && capped.usedAtPeriodStart >= capped.ceiling);
    for (const [name, , organizationId] of SEED_KEYS) assert.ok(byId.has(organizationId), name);
  });

  it('gives org_demo a slug pair, a site with more than 500 keywords, and sites without AI visibility or a completed audit', () => {
    const sites = seedPlatformData(NOW).organizations.get('org_demo')?.sites ?? [];
    assert.deepEqual(
      sites.filter((s) => s.slug === 'acme').map((s) => s.domain),
      ['acme.com', 'acme.org'],
    );
    assert.ok(sites.some((s) => s.keywords.length > 500));
    assert.ok(sites.some((s) => s.aiVisibility === null));
    assert.ok(sites.some((s) => s.auditRuns.length > 0 && s.auditRuns.every((r) => r.status !== 'COMPLETED')));
    for (const s of sites) assert.equal(new Set(s.keywords.map((k) => k.keyword)).size, s.keywords.length, s.domain);
  });

  it('has positions 0 and null, daily checks with missing days, and movers over the last week', () => {
    const acme = site('org_demo', 'acme.com');
    const positions = acme.keywords.map((k) => k.position);
    assert.ok(positions.includes(0) && positions.includes(null));
    const dates = acme.rankChecks.map((check) => check.date);
    assert.equal(dates.length, new Set(dates).size);
    assert.ok(!dates.includes('2026-11-14'), 'the day 7 days ago is missing');
    assert.ok(dates.length < 121 && dates.length > 100);
    const latest = new Map(acme.rankChecks.at(-1)?.entries.map((e) => [e.keyword, e.position]));
    const weekAgo = new Map(
      acme.rankChecks.find((c) => c.date === '2026-11-13')?.entries.map((e) => [e.keyword, e.position]),
    );
    assert.deepEqual([weekAgo.get('seo audit tool'), latest.get('seo audit tool')], [45, 3]);
    assert.deepEqual([weekAgo.get('ai visibility tracking'), latest.get('ai visibility tracking')], [null, 8]);
    assert.equal(weekAgo.has('generative engine optimization'), false, 'tracked only since 3 days');
    for (const keyword of acme.keywords) assert.equal(latest.get(keyword.keyword), keyword.position, keyword.keyword);
  });

  it('writes date-times with offsets (+01:00, -05:00), all in the past', () => {
    const all = [...seedPlatformData(NOW).organizations.values()].flatMap((org) => org.sites.flatMap(allDateTimes));
    assert.ok(all.some((t) => t.endsWith('+01:00')));
    assert.ok(all.some((t) => t.endsWith('-05:00')));
    for (const t of all) {
      assert.match(t, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$/);
      assert.ok(Date.parse(t) <= NOW.getTime(), t);
    }
  });

  it('has a RUNNING audit newer than the newest completed one', () => {
    const runs = site('org_demo', 'acme.com').auditRuns;
    const newest = (status: string) =>
      Math.max(...runs.filter((r) => r.status === status).map((r) => Date.parse(r.startedAt)));
    assert.ok(newest('RUNNING') > newest('COMPLETED'));
  });
});
