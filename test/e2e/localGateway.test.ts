import assert from 'node:assert/strict';
import { pino } from 'pino';
import { keyHashOf } from '../../src/auth/keyFormat.js';
import { loadConfig } from '../../src/config.js';
import { type RunningGateway, startGateway } from '../../src/gateway.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { type PlatformData, seedPlatformData } from '../../src/local/seedData.js';
import { createKeyCall, revokeKeyCall, verifyCall } from '../local/keyServiceHttp.js';
import { eventually } from '../support/eventually.js';
import { tempDir } from '../support/tempDir.js';
import { expectedAiVisibility, expectedAudit, expectedKeywords, expectedRankings, siteOf } from './expectedPayloads.js';
import { assertFailure, assertSuccess, callGateway, type GatewayAnswer, metricValue } from './gatewayCalls.js';

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;

interface LogLine {
  msg?: string;
  [field: string]: unknown;
}

/**
 * The gateway as `npm start` builds it with no upstreams configured (startGateway with
 * loadConfig of a bare environment), so the embedded platform and key service run on
 * loopback and every call below crosses real HTTP three times: test → gateway → platform
 * and key service. Expected payloads come from the seed data of the very second the
 * embedded platform was seeded (read back from the platform itself).
 */
describe('gateway with the embedded local platform and key service (real HTTP)', function () {
  this.timeout(20_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let gateway: RunningGateway;
  let local: NonNullable<RunningGateway['local']>;
  let data: PlatformData;
  let seedNowMs: number;
  const logs: LogLine[] = [];
  const logged = (msg: string) => logs.filter((line) => line.msg === msg);

  const get = (path: string, key: string | null = LOCAL_KEYS.demo, headers: Record<string, string> = {}) =>
    callGateway(gateway.url, path, key, headers);

  before(async function () {
    this.timeout(30_000);
    dir = await tempDir('e2e-gateway-');
    const config = loadConfig({ PORT: '0', LOCAL_DATA_DIR: dir.path, LOG_LEVEL: 'silent' });
    assert.equal(config.upstreams, null, 'no upstream configured: the embedded ones start');
    // The gateway's own log, kept to see the event stream at work.
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as LogLine) });
    const startedAfter = Date.now();
    gateway = await startGateway(config, logger);
    const startedBefore = Date.now();
    assert.ok(gateway.local, 'local upstreams started');
    local = gateway.local;
    await eventually(
      'the gateway follows the key events',
      () => logged('following key events: verifications may be cached').length > 0,
      10_000,
    );
    ({ data, seedNowMs } = await seedOfLocalPlatform(local.platform, startedAfter, startedBefore));
  });

  after(async () => {
    if (gateway) {
      gateway.server.closeAllConnections();
      await new Promise<void>((resolve) => gateway.server.close(() => resolve()));
      const [flushUsage, ...others] = gateway.closers;
      await flushUsage?.(5000);
      // nock (loaded in this process by other test files) wraps fetch, and its wrapper does not
      // always end a streaming body when the request is aborted: the gateway's event stream is
      // ended from the key service's side first, so closing the authenticator cannot hang.
      await gateway.local?.close();
      for (const close of others) await close(5000);
    }
    await dir?.remove();
  });

  describe('every route answers the seeded sites exactly', () => {
    it('keywords: ranked first then unranked, 0 and null flagged unranked, limits', async () => {
      const acme = siteOf(data, 'org_demo', 'acme.com');
      const catalog = siteOf(data, 'org_demo', 'bigcatalog.shop');
      const cases: Array<[string, unknown]> = [
        ['/v1/api/keywords?site=acme.com', expectedKeywords(acme, 'acme.com', 50)],
        ['/v1/api/keywords?site=acme.com&limit=500', expectedKeywords(acme, 'acme.com', 500)],
        ['/v1/api/keywords?site=ACME.COM&limit=12', expectedKeywords(acme, 'ACME.COM', 12)],
        ['/v1/api/keywords?site=acme.com&limit=0', expectedKeywords(acme, 'acme.com', 50)],
        ['/v1/api/keywords?site=acme.com&limit=ten', expectedKeywords(acme, 'acme.com', 50)],
        ['/v1/api/keywords?site=acme.org', expectedKeywords(siteOf(data, 'org_demo', 'acme.org'), 'acme.org', 50)],
        [
          '/v1/api/keywords?site=newsite.io',
          expectedKeywords(siteOf(data, 'org_demo', 'newsite.io'), 'newsite.io', 50),
        ],
        ['/v1/api/keywords?site=quiet.dev', { site: 'quiet.dev', keywords: [] }],
        ['/v1/api/keywords?site=bigcatalog.shop&limit=500', expectedKeywords(catalog, 'bigcatalog.shop', 500)],
        ['/v1/api/keywords?site=bigcatalog.shop&limit=9999', expectedKeywords(catalog, 'bigcatalog.shop', 500)],
        ['/v1/api/keywords?site=bigcatalog', expectedKeywords(catalog, 'bigcatalog', 50)],
      ];
      for (const [path, expected] of cases) assertSuccess(await get(path), expected, path);

      // The rules, spelled out on the answers themselves.
      const all = (await get('/v1/api/keywords?site=acme.com&limit=500')).body as { data: { keywords: Row[] } };
      type Row = { keyword: string; position: number | null; unranked: boolean };
      const rows = all.data.keywords;
      assert.equal(rows.length, acme.keywords.length);
      const firstUnranked = rows.findIndex((row) => row.unranked);
      assert.ok(firstUnranked > 0);
      assert.ok(
        rows.slice(firstUnranked).every((row) => row.unranked && row.position === null),
        'unranked last',
      );
      assert.ok(
        rows.slice(0, firstUnranked).every((row) => !row.unranked && (row.position ?? 0) >= 1),
        'ranked first',
      );
      for (const keyword of ['Zebra seo', 'café marketing']) {
        // Written 0 and null by the platform: both unranked in public.
        assert.deepEqual(
          rows.filter((row) => row.keyword === keyword).map((row) => [row.position, row.unranked]),
          [[null, true]],
        );
      }
      const big = (await get('/v1/api/keywords?site=bigcatalog.shop&limit=500')).body as { data: { keywords: Row[] } };
      assert.ok(catalog.keywords.length > 500);
      assert.equal(big.data.keywords.length, 500);
    });

    it('rankings: movers over the window, days and limit defaults and maxima', async () => {
      const acme = siteOf(data, 'org_demo', 'acme.com');
      const cases: Array<[string, (todayMs: number) => unknown]> = [
        ['/v1/api/rankings?site=acme.com', (t) => expectedRankings(acme, 'acme.com', 7, 10, t)],
        ['/v1/api/rankings?site=acme.com&days=30&limit=100', (t) => expectedRankings(acme, 'acme.com', 30, 100, t)],
        ['/v1/api/rankings?site=acme.com&days=1000&limit=1000', (t) => expectedRankings(acme, 'acme.com', 90, 100, t)],
        ['/v1/api/rankings?site=acme.com&days=0&limit=-3', (t) => expectedRankings(acme, 'acme.com', 7, 10, t)],
        [
          '/v1/api/rankings?site=acme.org&days=14',
          (t) => expectedRankings(siteOf(data, 'org_demo', 'acme.org'), 'acme.org', 14, 10, t),
        ],
        [
          '/v1/api/rankings?site=bigcatalog.shop&days=45&limit=100',
          (t) => expectedRankings(siteOf(data, 'org_demo', 'bigcatalog.shop'), 'bigcatalog.shop', 45, 100, t),
        ],
        [
          '/v1/api/rankings?site=newsite.io',
          (t) => expectedRankings(siteOf(data, 'org_demo', 'newsite.io'), 'newsite.io', 7, 10, t),
        ],
        ['/v1/api/rankings?site=quiet.dev', () => ({ site: 'quiet.dev', days: 7, movers: [] })],
      ];
      for (const [path, expectedAt] of cases) {
        const before = Date.now();
        const answer = await get(path);
        // The window ends on the gateway's today: the same on both sides unless midnight passed during the call.
        const expected = [expectedAt(before), expectedAt(Date.now())];
        const match = expected.find((candidate) => isDeepEqual(answer.body, { data: candidate, meta: {}, errors: [] }));
        assertSuccess(answer, match ?? expected[1], path);
      }
      const movers = ((await get('/v1/api/rankings?site=acme.com')).body as { data: { movers: unknown[] } }).data
        .movers;
      assert.ok(movers.length > 0, 'the seed has movers this week');
      // newsite.io has no check as old as the window's start: each keyword ranked now moved from null.
      const fresh = (
        (await get('/v1/api/rankings?site=newsite.io')).body as {
          data: { movers: Array<{ from: unknown; delta: unknown }> };
        }
      ).data;
      assert.ok(fresh.movers.length > 0 && fresh.movers.every((m) => m.from === null && m.delta === null));
    });

    it('ai-visibility: the newest 30-day rollup by instant, computedAt in Z, setup_required when none', async () => {
      for (const domain of ['acme.com', 'acme.org', 'bigcatalog.shop']) {
        assertSuccess(
          await get(`/v1/api/ai-visibility/summary?site=${domain}`),
          expectedAiVisibility(siteOf(data, 'org_demo', domain), domain),
          domain,
        );
      }
      for (const domain of ['newsite.io', 'quiet.dev']) {
        assertSuccess(
          await get(`/v1/api/ai-visibility/summary?site=${domain}`),
          { site: domain, setup_required: true, reason: 'no_ai_visibility' },
          domain,
        );
      }
      // acme.com's newest rollup was computed 3 h before the seed's now, written -05:00; one
      // half an hour older is written +01:00 and sorts after it as text.
      const summary = (
        (await get('/v1/api/ai-visibility/summary?site=acme.com')).body as {
          data: { ai_visibility: { summary: { computedAt: string } } };
        }
      ).data.ai_visibility.summary;
      assert.equal(summary.computedAt, new Date(seedNowMs - 3 * HOUR_MS).toISOString());
      assert.match(summary.computedAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.000Z$/);
    });

    it('audit-issues: the newest completed run (a newer running one passed over), completedAt in Z, setup_required when none', async () => {
      for (const domain of ['acme.com', 'acme.org', 'bigcatalog.shop']) {
        assertSuccess(
          await get(`/v1/api/audit-issues?site=${domain}`),
          expectedAudit(siteOf(data, 'org_demo', domain), domain),
          domain,
        );
      }
      for (const domain of ['newsite.io', 'quiet.dev']) {
        assertSuccess(
          await get(`/v1/api/audit-issues?site=${domain}`),
          { site: domain, setup_required: true, reason: 'no_audit' },
          domain,
        );
      }
      const acme = siteOf(data, 'org_demo', 'acme.com');
      const running = acme.auditRuns.find((run) => run.status === 'RUNNING');
      const audit = (
        (await get('/v1/api/audit-issues?site=acme.com')).body as {
          data: { audit: { latestRun: { id: string; completedAt: string } } };
        }
      ).data.audit;
      assert.ok(
        running &&
          Date.parse(running.startedAt) >
            Date.parse(acme.auditRuns.find((r) => r.id === audit.latestRun.id)?.startedAt ?? ''),
      );
      // Started 20 h before the seed's now at -05:00, 47 minutes long.
      assert.equal(audit.latestRun.completedAt, new Date(seedNowMs - 20 * HOUR_MS + 47 * MINUTE_MS).toISOString());
    });
  });

  it('refuses the ambiguous slug `acme` (400), a missing site (400) and an unknown one (404) on every route', async () => {
    for (const route of [
      '/v1/api/rankings',
      '/v1/api/ai-visibility/summary',
      '/v1/api/keywords',
      '/v1/api/audit-issues',
    ]) {
      assertFailure(await get(`${route}?site=acme`), 400, 'BAD_REQUEST', 'site_ambiguous', `${route} acme`);
      assertFailure(await get(`${route}?site=%20`), 400, 'BAD_REQUEST', 'site_missing', `${route} blank`);
      assertFailure(await get(`${route}?site=nowhere.example`), 404, 'NOT_FOUND', 'site_not_found', `${route} unknown`);
    }
  });

  it("shows another organization's acme.com only to that organization", async () => {
    const other = siteOf(data, 'org_other', 'acme.com');
    const path = '/v1/api/keywords?site=acme.com&limit=500';
    // Same URL, two organizations, one right after the other (the answer cache must not mix them).
    const demoAnswer = await get(path, LOCAL_KEYS.demo);
    const otherAnswer = await get(path, LOCAL_KEYS.other);
    assertSuccess(demoAnswer, expectedKeywords(siteOf(data, 'org_demo', 'acme.com'), 'acme.com', 500), 'org_demo');
    assertSuccess(otherAnswer, expectedKeywords(other, 'acme.com', 500), 'org_other');
    assert.deepEqual(
      (otherAnswer.body as { data: { keywords: Array<{ keyword: string }> } }).data.keywords.map((k) => k.keyword),
      ['other acme secret'],
    );
    assert.ok(!JSON.stringify(demoAnswer.body).includes('other acme secret'));
    assertSuccess(
      await get('/v1/api/ai-visibility/summary?site=acme.com', LOCAL_KEYS.other),
      expectedAiVisibility(other, 'acme.com'),
      'org_other ai',
    );
    // `acme` is unique within org_other.
    assertSuccess(
      await get('/v1/api/audit-issues?site=acme', LOCAL_KEYS.other),
      { site: 'acme', setup_required: true, reason: 'no_audit' },
      'org_other audit',
    );
    assertFailure(
      await get('/v1/api/keywords?site=other-brand.co', LOCAL_KEYS.demo),
      404,
      'NOT_FOUND',
      'site_not_found',
      'demo → other-brand.co',
    );
    assertFailure(
      await get('/v1/api/keywords?site=bigcatalog.shop', LOCAL_KEYS.other),
      404,
      'NOT_FOUND',
      'site_not_found',
      'other → bigcatalog.shop',
    );
  });

  it('refuses each seeded key that may not pass, with its status and reason', async () => {
    // Each key asks for a site of its own organization.
    const cases: Array<[string, string, string, number, string, string]> = [
      ['below pro (starter)', LOCAL_KEYS.starter, 'starter-shop.com', 403, 'FORBIDDEN', 'plan_not_eligible'],
      ['unknown plan (legacy_team)', LOCAL_KEYS.legacy, 'legacy.example', 403, 'FORBIDDEN', 'plan_not_eligible'],
      ['at the usage ceiling', LOCAL_KEYS.capped, 'capped.net', 403, 'FORBIDDEN', 'usage_ceiling_reached'],
      ['write only', LOCAL_KEYS.demoWriteOnly, 'acme.com', 403, 'FORBIDDEN', 'missing_permission'],
      ['expired', LOCAL_KEYS.demoExpired, 'acme.com', 401, 'UNAUTHORIZED', 'expired_key'],
      ['revoked', LOCAL_KEYS.demoRevoked, 'acme.com', 401, 'UNAUTHORIZED', 'invalid_key'],
    ];
    for (const [what, key, site, status, code, reason] of cases) {
      // Twice: the second answer may come from the verification cache and must not differ.
      for (let i = 0; i < 2; i++) {
        const answer = await get(`/v1/api/keywords?site=${site}`, key);
        assertFailure(answer, status, code, reason, what);
        if (status === 401) assert.equal(answer.headers.get('www-authenticate'), 'Bearer', what);
      }
    }
    assertFailure(await get('/v1/api/keywords?site=acme.com', null), 401, 'UNAUTHORIZED', 'missing_key', 'no key');
  });

  it('a key created through the management API is refused on the very next request after its revocation', async () => {
    const created = await createKeyCall(local.keyService, 'org_other', { name: 'e2e reader', permissions: ['read'] });
    assert.equal(created.status, 201, created.text);
    const { key, plaintext } = created.body;
    const verifies = () =>
      metricValue(gateway.url, 'gateway_key_service_request_duration_seconds_count', { operation: 'verify' });

    const before = await verifies();
    for (let i = 0; i < 3; i++) {
      assertSuccess(
        await get(`/v1/api/keywords?site=other-brand.co&limit=${i + 1}`, plaintext),
        expectedKeywords(siteOf(data, 'org_other', 'other-brand.co'), 'other-brand.co', i + 1),
        `call ${i + 1} with the new key`,
      );
    }
    assert.equal(await verifies(), before + 1, 'one verification, then the cached one (the event stream is open)');

    const revoked = await revokeKeyCall(local.keyService, 'org_other', key.id);
    assert.equal(revoked.status, 200, revoked.text);
    assertFailure(
      await get('/v1/api/keywords?site=other-brand.co&limit=1', plaintext),
      401,
      'UNAUTHORIZED',
      'invalid_key',
      'right after revoke',
    );
    // Refused because the event dropped the cached verification, not because it aged out.
    assert.deepEqual(
      logged('key revoked: verification dropped').map((line) => line.keyId),
      [key.id],
    );
    assert.equal(await verifies(), before + 2);
    assertFailure(
      await get('/v1/api/keywords?site=other-brand.co', plaintext),
      401,
      'UNAUTHORIZED',
      'invalid_key',
      'later',
    );
  });

  it('counts exactly one usage event per successful call (200 and 304) at the local key service, none for failures', async () => {
    const pending = () => metricValue(gateway.url, 'gateway_usage_events_pending');
    const used = async () =>
      (await verifyCall(local.keyService, keyHashOf(LOCAL_KEYS.other))).body.organization.usage.used;
    await waitFor('earlier usage flushed', async () => (await pending()) === 0);
    const usedBefore = await used();

    const key = LOCAL_KEYS.other;
    const answers: GatewayAnswer[] = [];
    const first = await get('/v1/api/keywords?site=acme.com', key);
    answers.push(first);
    answers.push(
      await get('/v1/api/keywords?site=acme.com', key, { 'if-none-match': first.headers.get('etag') ?? '' }),
    );
    answers.push(await get('/v1/api/rankings?site=other-brand.co', key));
    answers.push(await get('/v1/api/ai-visibility/summary?site=acme.com', key));
    answers.push(await get('/v1/api/audit-issues?site=other-brand.co', key));
    answers.push(await get('/v1/api/keywords?site=nowhere.example', key));
    answers.push(await get('/v1/api/keywords?site=', key));
    answers.push(await get('/v1/api/keywords?site=bigcatalog.shop', key));
    answers.push(await get('/v1/api/keywords?site=acme.com', `${key.slice(0, -1)}X`));
    answers.push(await callGateway(gateway.url, '/v1/api/nothing-here?site=acme.com', key));
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 304, 200, 200, 200, 404, 400, 404, 401, 404],
    );
    const successes = answers.filter((answer) => answer.status === 200 || answer.status === 304).length;

    await waitFor(
      `used to grow by ${successes}`,
      async () => (await used()) >= usedBefore + successes && (await pending()) === 0,
    );
    assert.equal(await used(), usedBefore + successes);
  });
});

/** Polls an async condition every 50 ms for up to 10 s. */
async function waitFor(what: string, condition: () => Promise<boolean>, withinMs = 10_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function isDeepEqual(actual: unknown, expected: unknown): boolean {
  try {
    assert.deepEqual(actual, expected);
    return true;
  } catch {
    return false;
  }
}

/**
 * The seed data the embedded platform serves. It was seeded with the clock of some instant
 * during startGateway; every seeded date-time is written to the second, so the seed of that
 * second is the same data. The second is found by asking the platform for one seeded value.
 */
async function seedOfLocalPlatform(
  platform: { url: string; token: string },
  startedAfter: number,
  startedBefore: number,
): Promise<{ data: PlatformData; seedNowMs: number }> {
  const res = await fetch(platform.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${platform.token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ organization(id: "org_demo") { site(id: "site_acme_com") { createdAt } } }' }),
  });
  const answer = (await res.json()) as { data: { organization: { site: { createdAt: string } } } };
  const served = answer.data.organization.site.createdAt;
  for (let second = Math.floor(startedAfter / 1000); second <= Math.floor(startedBefore / 1000); second++) {
    const data = seedPlatformData(new Date(second * 1000));
    if (siteOf(data, 'org_demo', 'acme.com').createdAt === served) return { data, seedNowMs: second * 1000 };
  }
  throw new Error(`the local platform's seed (acme.com created ${served}) is of no second during the start`);
}
