import assert from 'node:assert/strict';
import { RANKINGS_MOVERS, RANKINGS_SITE, rankingsAnswer } from '../fixtures/platformAnswers.js';
import { type ServedApp, serveApp } from '../support/callApi.js';
import { PLATFORM_TOKEN } from '../support/fakeServices.js';
import { assertEveryCallScoped, mockPlatform } from '../support/platformMock.js';

describe('GET /v1/api/rankings', () => {
  let app: ServedApp;

  before(async () => {
    app = await serveApp(); // now: 2026-11-21T12:00:00Z
  });
  after(async () => {
    await app.close();
  });

  it('answers the movers in the exact success envelope', async () => {
    const { scope, posted } = mockPlatform({ body: rankingsAnswer(RANKINGS_SITE) });
    const answer = await app.call('/v1/api/rankings?site=%20shoes.example%20');
    scope.done();
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(answer.body, {
      data: { site: 'shoes.example', days: 7, movers: RANKINGS_MOVERS },
      meta: {},
      errors: [],
    });
    assert.equal(posted.length, 1);
    assert.equal(posted[0]?.operationName, 'Rankings');
    assert.deepEqual(posted[0]?.variables, { organizationId: 'org_a', site: 'shoes.example', startDate: '2026-11-14' });
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('asks for the start snapshot on or before today (UTC) minus days, and echoes the days used', async () => {
    const cases = [
      { query: 'days=1', days: 1, startDate: '2026-11-20' },
      { query: 'days=30', days: 30, startDate: '2026-10-22' },
      { query: 'days=90', days: 90, startDate: '2026-08-23' },
      { query: 'days=91', days: 90, startDate: '2026-08-23' },
      { query: 'days=0', days: 7, startDate: '2026-11-14' },
      { query: 'days=abc', days: 7, startDate: '2026-11-14' },
      { query: 'days=2.5', days: 7, startDate: '2026-11-14' },
      { query: 'days=3&days=4', days: 7, startDate: '2026-11-14' },
      { query: 'days=007', days: 7, startDate: '2026-11-14' },
    ];
    const { scope, posted } = mockPlatform(...cases.map(() => ({ body: rankingsAnswer(RANKINGS_SITE) })));
    for (const { query, days } of cases) {
      const answer = await app.call(`/v1/api/rankings?site=shoes.example&${query}`);
      assert.equal(answer.status, 200, query);
      assert.equal((answer.body as { data: { days: number } }).data.days, days, query);
    }
    scope.done();
    assert.deepEqual(
      posted.map((p) => p.variables.startDate),
      cases.map((c) => c.startDate),
    );
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('counts days in UTC calendar days whatever the time of day', async () => {
    for (const [now, days, startDate] of [
      ['2026-03-01T00:00:00.000Z', 1, '2026-02-28'],
      ['2026-03-01T23:59:59.999Z', 1, '2026-02-28'],
      ['2028-03-01T00:30:00.000Z', 1, '2028-02-29'],
      ['2027-01-05T10:00:00.000Z', 10, '2026-12-26'],
    ] as const) {
      const clocked = await serveApp({ now: () => new Date(now) });
      try {
        const { scope, posted } = mockPlatform({ body: rankingsAnswer(RANKINGS_SITE) });
        const answer = await clocked.call(`/v1/api/rankings?site=shoes.example&days=${days}`);
        scope.done();
        assert.equal(answer.status, 200);
        assert.equal(posted[0]?.variables.startDate, startDate, `${now} − ${days} days`);
      } finally {
        await clocked.close();
      }
    }
  });

  it('keeps the first `limit` movers (default 10, at most 100)', async () => {
    const many = {
      latest: {
        date: '2026-11-21',
        entries: Array.from({ length: 150 }, (_, i) => ({
          keywordId: `k${i}`,
          keyword: `kw ${String(i).padStart(3, '0')}`,
          position: 1 + (i % 100),
        })),
      },
      start: null,
    };
    const { scope } = mockPlatform(
      { body: rankingsAnswer(many) },
      { body: rankingsAnswer(many) },
      { body: rankingsAnswer(many) },
      { body: rankingsAnswer(many) },
    );
    const count = async (query: string) => {
      const answer = await app.call(`/v1/api/rankings?site=shoes.example${query}`);
      return (answer.body as { data: { movers: unknown[] } }).data.movers.length;
    };
    assert.equal(await count(''), 10);
    assert.equal(await count('&limit=3'), 3);
    assert.equal(await count('&limit=1000'), 100);
    assert.equal(await count('&limit=-1'), 10);
    scope.done();
  });

  it('answers movers [] when the site has no rank check at all', async () => {
    const { scope } = mockPlatform({ body: rankingsAnswer({ latest: null, start: null }) });
    const answer = await app.call('/v1/api/rankings?site=shoes.example&days=14');
    scope.done();
    assert.deepEqual(answer.body, { data: { site: 'shoes.example', days: 14, movers: [] }, meta: {}, errors: [] });
  });

  it('makes every keyword ranked now a mover from null when no check is that old', async () => {
    const { scope } = mockPlatform({ body: rankingsAnswer({ latest: RANKINGS_SITE.latest, start: null }) });
    const answer = await app.call('/v1/api/rankings?site=shoes.example');
    scope.done();
    assert.deepEqual((answer.body as { data: { movers: unknown[] } }).data.movers, [
      { keyword: 'running shoes', from: null, to: 3, delta: null },
      { keyword: 'shoe care', from: null, to: 12, delta: null },
      { keyword: 'laces', from: null, to: 40, delta: null },
    ]);
  });

  it("scopes the platform call to the key's organization, whatever the query string says", async () => {
    const { scope, posted } = mockPlatform({ body: rankingsAnswer(RANKINGS_SITE) });
    const answer = await app.call('/v1/api/rankings?site=shoes.example&organizationId=org_a&org=org_a', {
      key: 'key-org-b',
    });
    scope.done();
    assert.equal(answer.status, 200);
    assertEveryCallScoped(posted, 'org_b', PLATFORM_TOKEN);
  });
});
