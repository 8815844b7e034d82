import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildSchema, parse, validate } from 'graphql';
import {
  AiVisibilityDocument,
  KeywordsDocument,
  KeywordsPageDocument,
  LatestAuditDocument,
  RankingsDocument,
} from '../../src/generated/graphql.js';
import type { ServedUpstream } from '../../src/local/localHttp.js';
import { startLocalPlatform } from '../../src/local/localPlatform.js';
import { seedPlatformData } from '../../src/local/seedData.js';
import { compareCodePoints } from '../../src/mappers/codePointOrder.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
const PROJECT_DOCUMENTS: Record<string, { toString(): string }> = {
  AiVisibility: AiVisibilityDocument,
  Keywords: KeywordsDocument,
  KeywordsPage: KeywordsPageDocument,
  LatestAudit: LatestAuditDocument,
  Rankings: RankingsDocument,
};

interface KeywordPage {
  totalCount: number;
  edges: Array<{
    cursor: string;
    node: { id: string; keyword: string; position: number | null; searchVolume: number | null; createdAt: string };
  }>;
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

interface RunNode {
  id: string;
  status: string;
  startedAt: string;
  completedAt: string | null;
  scores: Record<string, number | null> | null;
  issueSummary: Array<{ severity: string; count: number }>;
  issues: {
    edges: Array<{ node: { severity: string; title: string; pageUrl: string } }>;
    pageInfo: { hasNextPage: boolean };
  };
}

/** The fields the tests select on a site; each query selects some of them. */
interface SiteAnswer {
  trackedKeywords: KeywordPage;
  rankSnapshot: {
    date: string;
    entries: Array<{ keywordId: string; keyword: string; position: number | null }>;
  } | null;
  aiVisibility: {
    id: string;
    promptCounts: { active: number; paused: number; archived: number };
    rollups: Array<{ window: string; scoreBps: number; computedAt: string }>;
  } | null;
  auditRuns: {
    edges: Array<{ cursor: string; node: RunNode }>;
    pageInfo: { hasNextPage: boolean; endCursor: string | null };
  };
}

interface GraphQLAnswer {
  data?: {
    organization: { site?: SiteAnswer | null; siteLookup?: Array<{ id: string; domain: string; slug: string }> } | null;
  } | null;
  errors?: Array<{ message: string; extensions?: { code?: string }; path?: unknown[] }>;
}

describe('local platform: GraphQL over HTTP for platform.graphql', () => {
  let platform: ServedUpstream;

  const post = async (body: unknown, token: string | null = platform.token) => {
    const response = await fetch(platform.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, text, body: (text === '' ? null : JSON.parse(text)) as GraphQLAnswer };
  };
  const gql = async (query: string, variables: Record<string, unknown> = {}) => {
    const answer = await post({ query, variables });
    assert.equal(answer.status, 200);
    return answer.body;
  };
  /** Runs a query on one of org_demo's sites (by id) and answers that site. */
  const onSite = async (
    siteId: string,
    selection: string,
    variables: Record<string, unknown> = {},
    declarations = '',
  ) => {
    const answer = await gql(
      `query Q${declarations} { organization(id: "org_demo") { site(id: "${siteId}") { ${selection} } } }`,
      variables,
    );
    assert.equal(answer.errors, undefined, JSON.stringify(answer.errors));
    const site = answer.data?.organization?.site;
    assert.ok(site, 'the site exists');
    return site;
  };

  before(async () => {
    platform = await startLocalPlatform(seedPlatformData(NOW));
  });
  after(async () => {
    await platform.close();
  });

  describe('transport', () => {
    it('answers 401 with no body without the service token, or with a wrong one', async () => {
      for (const token of [null, 'wrong']) {
        const answer = await post({ query: '{ organization(id: "org_demo") { id } }' }, token);
        assert.equal(answer.status, 401);
        assert.equal(answer.text, '');
      }
    });

    it('refuses a body that is not a GraphQL request with 400, and other methods with 405', async () => {
      assert.equal((await post('{not json')).status, 400);
      assert.equal((await post({ variables: {} })).status, 400);
      const get = await fetch(platform.url, { headers: { authorization: `Bearer ${platform.token}` } });
      assert.equal(get.status, 405);
      assert.equal(get.headers.get('allow'), 'POST');
      await get.arrayBuffer();
    });

    it('refuses a body over 1 MB with 413 and answers an unknown path 404, both as GraphQL errors', async () => {
      const huge = await post({ query: `{ organization(id: "${'x'.repeat(1_100_000)}") { id } }` });
      assert.equal(huge.status, 413);
      assert.equal(typeof huge.body.errors?.[0]?.message, 'string');
      const nowhere = await fetch(new URL('/nowhere', platform.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${platform.token}` },
      });
      assert.equal(nowhere.status, 404);
      assert.equal(((await nowhere.json()) as GraphQLAnswer).errors?.[0]?.extensions?.code, 'NOT_FOUND');
    });

    it('answers parse and validation errors as GraphQL errors', async () => {
      const broken = await gql('{ organization(id: "org_demo") { ');
      assert.equal(broken.errors?.[0]?.extensions?.code, 'GRAPHQL_PARSE_FAILED');
      const unknownField = await gql('{ organization(id: "org_demo") { secret } }');
      assert.equal(unknownField.errors?.[0]?.extensions?.code, 'GRAPHQL_VALIDATION_FAILED');
      // Asked again: the cached verdict is the same.
      assert.deepEqual(await gql('{ organization(id: "org_demo") { secret } }'), unknownField);
    });
  });

  describe("the project's own operations (src/generated, printed)", () => {
    it('are valid against the vendored schema', () => {
      const schema = buildSchema(
        readFileSync(new URL('../../queries/schema/platform.graphql', import.meta.url), 'utf8'),
      );
      for (const [name, document] of Object.entries(PROJECT_DOCUMENTS)) {
        assert.deepEqual(validate(schema, parse(document.toString())), [], name);
      }
    });

    it('run without errors on the seeded demo site', async () => {
      const variables: Record<string, Record<string, unknown>> = {
        AiVisibility: { organizationId: 'org_demo', site: 'acme.com' },
        Keywords: { organizationId: 'org_demo', site: 'acme.com', rankedFirst: 5, unrankedFirst: 5 },
        LatestAudit: { organizationId: 'org_demo', site: 'acme.com' },
        Rankings: { organizationId: 'org_demo', site: 'acme.com', startDate: '2026-11-14' },
      };
      for (const [name, vars] of Object.entries(variables)) {
        const answer = await post({ query: String(PROJECT_DOCUMENTS[name]), variables: vars, operationName: name });
        assert.equal(answer.status, 200);
        assert.equal(answer.body.errors, undefined, `${name}: ${JSON.stringify(answer.body.errors)}`);
        assert.equal(answer.body.data?.organization?.siteLookup?.length, 1, name);
      }
    });

    it('serve the typed platform client end to end', async () => {
      const client = createPlatformClient({ url: platform.url, token: platform.token, timeoutMs: 5000 });
      const first = await client.request(KeywordsDocument, {
        organizationId: 'org_demo',
        site: 'bigcatalog.shop',
        rankedFirst: 200,
        unrankedFirst: 200,
      });
      const site = first.organization?.siteLookup[0];
      assert.ok(site);
      assert.equal(site.ranked.edges.length, 200);
      assert.equal(site.ranked.pageInfo.hasNextPage, true);
      const next = await client.request(KeywordsPageDocument, {
        organizationId: 'org_demo',
        siteId: site.id,
        first: 200,
        after: site.ranked.pageInfo.endCursor ?? '',
        ranked: true,
        orderBy: { field: 'POSITION', direction: 'ASC' },
      });
      const positions = [...site.ranked.edges, ...(next.organization?.site?.trackedKeywords.edges ?? [])].map(
        (edge) => edge.node.position ?? 0,
      );
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => a - b),
      );
      assert.ok(positions.every((p) => p >= 1));
    });
  });

  describe('siteLookup', () => {
    const lookup = async (organizationId: string, identifier: string) =>
      (
        await gql(
          'query L($o: ID!, $i: String!) { organization(id: $o) { siteLookup(identifier: $i) { id domain slug } } }',
          {
            o: organizationId,
            i: identifier,
          },
        )
      ).data?.organization?.siteLookup ?? [];

    it('matches the domain ASCII case-insensitively', async () => {
      for (const identifier of ['acme.com', 'ACME.COM', 'Acme.Com']) {
        assert.deepEqual(
          (await lookup('org_demo', identifier)).map((s) => s.id),
          ['site_acme_com'],
          identifier,
        );
      }
      // Only A–Z fold: U+017F (long s) upper-cases to S in Unicode, but is another text here.
      assert.deepEqual(await lookup('org_demo', 'new\u017Fite.io'), []);
      assert.deepEqual(await lookup('org_demo', 'NEWSITE.IO').then((sites) => sites.map((s) => s.id)), [
        'site_newsite_io',
      ]);
    });

    it('matches the slug exactly, and a slug may name several sites', async () => {
      assert.deepEqual((await lookup('org_demo', 'acme')).map((s) => s.domain).sort(), ['acme.com', 'acme.org']);
      assert.deepEqual(await lookup('org_demo', 'ACME'), []);
      assert.deepEqual(
        (await lookup('org_demo', 'bigcatalog')).map((s) => s.domain),
        ['bigcatalog.shop'],
      );
    });

    it("answers [] for no match, and only the organization's own sites", async () => {
      assert.deepEqual(await lookup('org_demo', 'acme.net'), []);
      assert.deepEqual(await lookup('org_demo', 'other-brand.co'), []);
      assert.deepEqual(
        (await lookup('org_other', 'acme.com')).map((s) => s.id),
        ['site_other_acme_com'],
      );
      const missing = await gql('{ organization(id: "org_nope") { id } }');
      assert.deepEqual(missing.data, { organization: null });
      const foreign = await gql('{ organization(id: "org_demo") { site(id: "site_other_acme_com") { id } } }');
      assert.deepEqual(foreign.data, { organization: { site: null } });
    });
  });

  describe('trackedKeywords', () => {
    const KEYWORD_FIELDS =
      'totalCount edges { cursor node { id keyword position searchVolume createdAt } } pageInfo { hasNextPage endCursor }';
    type Page = KeywordPage;
    const page = async (siteId: string, args: string, variables: Record<string, unknown> = {}, declarations = '') =>
      (
        await onSite(
          siteId,
          `trackedKeywords${args === '' ? '' : `(${args})`} { ${KEYWORD_FIELDS} }`,
          variables,
          declarations,
        )
      ).trackedKeywords;

    it('refuses a page above 200 with BAD_USER_INPUT, and accepts exactly 200', async () => {
      const answer = await gql(
        '{ organization(id: "org_demo") { site(id: "site_bigcatalog_shop") { trackedKeywords(first: 201) { totalCount } } } }',
      );
      assert.equal(answer.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT');
      assert.deepEqual(answer.errors?.[0]?.path, ['organization', 'site', 'trackedKeywords']);
      const viaVariable = await gql(
        'query Q($n: Int) { organization(id: "org_demo") { site(id: "site_bigcatalog_shop") { trackedKeywords(first: $n) { totalCount } } } }',
        { n: 1000 },
      );
      assert.equal(viaVariable.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT');
      assert.equal((await page('site_bigcatalog_shop', 'first: 200')).edges.length, 200);
    });

    it('defaults to 50 by CREATED_AT ascending (an instant, whatever the offset)', async () => {
      const result = await page('site_acme_com', '');
      assert.equal(result.edges.length, 50);
      const instants = result.edges.map((edge) => Date.parse(edge.node.createdAt));
      assert.deepEqual(
        instants,
        [...instants].sort((a, b) => a - b),
      );
      assert.ok(result.edges.some((edge) => edge.node.createdAt.endsWith('+01:00')));
      assert.ok(result.edges.some((edge) => edge.node.createdAt.endsWith('-05:00')));
    });

    it('POSITION ASC puts 0 and null FIRST; ties go by keyword code point', async () => {
      const all = await page('site_acme_com', 'first: 200, orderBy: { field: POSITION, direction: ASC }');
      const positions = all.edges.map((edge) => edge.node.position);
      const firstRanked = positions.findIndex((p) => p !== null && p > 0);
      assert.ok(firstRanked > 0);
      assert.ok(positions.slice(0, firstRanked).includes(0) && positions.slice(0, firstRanked).includes(null));
      assert.ok(positions.slice(firstRanked).every((p) => p !== null && p > 0));
      const unrankedTexts = all.edges.slice(0, firstRanked).map((edge) => edge.node.keyword);
      assert.deepEqual(unrankedTexts, [...unrankedTexts].sort(compareCodePoints), 'unranked tie on 0: by text');

      const atFour = all.edges.filter((edge) => edge.node.position === 4).map((edge) => edge.node.keyword);
      assert.deepEqual(atFour, ['Audit software', 'audit software', 'café seo']);
      // Code point order: U+FF33 before U+1F680 (UTF-16 code units would say otherwise).
      const atFive = all.edges.filter((edge) => edge.node.position === 5).map((edge) => edge.node.keyword);
      assert.deepEqual(atFive, ['Ｓｅｏ tools', '🚀 rank launch']);
    });

    it('POSITION DESC puts the worst ranked first and unranked last, ties still ascending', async () => {
      const all = await page('site_acme_com', 'first: 200, orderBy: { field: POSITION, direction: DESC }');
      const positions = all.edges.map((edge) => edge.node.position ?? 0);
      assert.deepEqual(
        positions,
        [...positions].sort((a, b) => b - a),
      );
      const atFive = all.edges.filter((edge) => edge.node.position === 5).map((edge) => edge.node.keyword);
      assert.deepEqual(atFive, ['Ｓｅｏ tools', '🚀 rank launch']);
    });

    it('filters ranked (position 1 or more) and unranked (0 or null), with totalCount across pages', async () => {
      const all = await page('site_acme_com', 'first: 200');
      const ranked = await page('site_acme_com', 'first: 3, filter: { ranked: true }');
      const unranked = await page('site_acme_com', 'first: 3, filter: { ranked: false }');
      assert.equal(ranked.edges.length, 3);
      assert.equal(ranked.totalCount + unranked.totalCount, all.totalCount);
      assert.equal(ranked.totalCount, all.edges.filter((e) => (e.node.position ?? 0) >= 1).length);
      const everyUnranked = await page('site_acme_com', 'first: 200, filter: { ranked: false }');
      assert.ok(everyUnranked.edges.every((e) => e.node.position === null || e.node.position === 0));
      assert.equal((await page('site_acme_com', 'first: 1, filter: { ranked: null }')).totalCount, all.totalCount);
    });

    it('KEYWORD orders by code point; SEARCH_VOLUME counts null as 0 with text ties', async () => {
      const byText = await page(
        'site_acme_com',
        'first: 200, orderBy: { field: KEYWORD, direction: ASC }, filter: { ranked: false }',
      );
      const texts = byText.edges.map((edge) => edge.node.keyword);
      assert.deepEqual(texts, [...texts].sort(compareCodePoints));
      assert.ok(texts.indexOf('Ｓｅｏ audit') < texts.indexOf('🚀 seo launch'));
      assert.ok(texts.indexOf('Zebra seo') < texts.indexOf('café marketing'));

      const byVolume = await page('site_acme_com', 'first: 200, orderBy: { field: SEARCH_VOLUME, direction: DESC }');
      const volumes = byVolume.edges.map((edge) => edge.node.searchVolume ?? 0);
      assert.deepEqual(
        volumes,
        [...volumes].sort((a, b) => b - a),
      );
      const zeros = byVolume.edges
        .filter((edge) => (edge.node.searchVolume ?? 0) === 0)
        .map((edge) => edge.node.keyword);
      assert.ok(zeros.length > 1);
      assert.deepEqual(zeros, [...zeros].sort(compareCodePoints));
    });

    it('pages with Relay cursors: no row twice, none left out, and the last page says so', async () => {
      const seen: string[] = [];
      let after: string | null = null;
      let total = 0;
      for (let i = 0; i < 10; i++) {
        const result: Page = await page(
          'site_bigcatalog_shop',
          'first: 150, after: $after, orderBy: { field: POSITION, direction: ASC }, filter: { ranked: true }',
          { after },
          '($after: String)',
        );
        total = result.totalCount;
        seen.push(...result.edges.map((edge) => edge.node.id));
        assert.equal(result.pageInfo.endCursor, result.edges[result.edges.length - 1]?.cursor ?? null);
        if (!result.pageInfo.hasNextPage) break;
        after = result.pageInfo.endCursor;
      }
      assert.ok(total > 150);
      assert.equal(seen.length, total);
      assert.equal(new Set(seen).size, total);
    });

    it('answers an empty page after the last row, and refuses a cursor of another list', async () => {
      const all = await page('site_acme_org', 'first: 200');
      const last = all.pageInfo.endCursor;
      const beyond = await page('site_acme_org', 'first: 5, after: $after', { after: last }, '($after: String)');
      assert.deepEqual([beyond.edges, beyond.pageInfo], [[], { hasNextPage: false, endCursor: null }]);
      for (const [args, after] of [
        ['first: 5, after: $after, orderBy: { field: KEYWORD, direction: ASC }', last],
        ['first: 5, after: $after', 'bm90IGEgY3Vyc29y'],
      ] as const) {
        const answer = await gql(
          `query Q($after: String) { organization(id: "org_demo") { site(id: "site_acme_org") { trackedKeywords(${args}) { totalCount } } } }`,
          { after },
        );
        assert.equal(answer.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', args);
      }
    });

    it('serves more than 500 keywords on bigcatalog.shop', async () => {
      assert.ok((await page('site_bigcatalog_shop', 'first: 1')).totalCount > 500);
    });
  });

  describe('rankSnapshot', () => {
    const snapshot = async (siteId: string, onOrBefore?: string) => {
      const args = onOrBefore === undefined ? '' : '(onOrBefore: $d)';
      const site = await onSite(
        siteId,
        `rankSnapshot${args} { date entries { keywordId keyword position } }`,
        { d: onOrBefore },
        onOrBefore === undefined ? '' : '($d: Date)',
      );
      return site.rankSnapshot;
    };

    it('answers the newest check without an argument, with every keyword and its current position', async () => {
      const latest = await snapshot('site_acme_com');
      assert.equal(latest?.date, '2026-11-21');
      const current = (await onSite('site_acme_com', 'trackedKeywords(first: 200) { edges { node { id position } } }'))
        .trackedKeywords.edges;
      assert.deepEqual(
        new Map(latest?.entries.map((e) => [e.keywordId, e.position])),
        new Map(current.map((e) => [e.node.id, e.node.position])),
      );
    });

    it('answers the newest check on or before the date, skipping missing days', async () => {
      assert.equal((await snapshot('site_acme_com', '2026-11-20'))?.date, '2026-11-20');
      // 2026-11-14 (7 days ago) has no check: the one before it answers.
      assert.equal((await snapshot('site_acme_com', '2026-11-14'))?.date, '2026-11-13');
      assert.equal((await snapshot('site_acme_com', '2030-01-01'))?.date, '2026-11-21');
    });

    it('answers null when there is no check on or before the date, or none at all', async () => {
      assert.equal(await snapshot('site_acme_com', '2026-01-01'), null);
      assert.equal(await snapshot('site_newsite_io', '2026-11-14'), null);
      assert.equal(await snapshot('site_quiet_dev'), null);
    });

    it('refuses a Date that is not a calendar date', async () => {
      for (const d of ['2026-02-30', '2026-11-21T00:00:00Z', 'yesterday']) {
        const answer = await gql(
          'query Q($d: Date) { organization(id: "org_demo") { site(id: "site_acme_com") { rankSnapshot(onOrBefore: $d) { date } } } }',
          { d },
        );
        assert.equal(answer.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT', d);
      }
      const literal = await gql(
        '{ organization(id: "org_demo") { site(id: "site_acme_com") { rankSnapshot(onOrBefore: "2026-13-01") { date } } } }',
      );
      assert.ok((literal.errors?.length ?? 0) > 0);
    });
  });

  describe('aiVisibility', () => {
    it('answers rollups of the window newest first by instant, not by text', async () => {
      const site = await onSite(
        'site_acme_com',
        'aiVisibility { promptCounts { active paused archived } rollups(window: DAYS_30, first: 3) { window scoreBps computedAt } }',
      );
      const rollups = site.aiVisibility?.rollups ?? [];
      assert.equal(rollups.length, 3);
      assert.ok(rollups.every((r) => r.window === 'DAYS_30'));
      const instants = rollups.map((r) => Date.parse(r.computedAt));
      assert.deepEqual(
        instants,
        [...instants].sort((a, b) => b - a),
      );
      // The newest is written in -05:00; the next, half an hour older, in +01:00 sorts after it as text.
      assert.ok(rollups[0]?.computedAt.endsWith('-05:00'));
      assert.ok(rollups[1]?.computedAt.endsWith('+01:00'));
      assert.ok((rollups[1]?.computedAt ?? '') > (rollups[0]?.computedAt ?? ''));
      assert.deepEqual(site.aiVisibility?.promptCounts, { active: 42, paused: 6, archived: 3 });
      const single = await onSite('site_acme_com', 'aiVisibility { rollups(window: DAYS_30) { computedAt } }');
      assert.deepEqual(single.aiVisibility?.rollups, [{ computedAt: rollups[0]?.computedAt }]);
    });

    it('answers [] before the first rollup, null without a program, and refuses first above 200', async () => {
      assert.deepEqual(
        (await onSite('site_acme_org', 'aiVisibility { rollups(window: DAYS_30) { scoreBps } }')).aiVisibility,
        {
          rollups: [],
        },
      );
      assert.equal((await onSite('site_newsite_io', 'aiVisibility { id }')).aiVisibility, null);
      const tooMany = await gql(
        '{ organization(id: "org_demo") { site(id: "site_acme_com") { aiVisibility { rollups(window: DAYS_7, first: 201) { scoreBps } } } } }',
      );
      assert.equal(tooMany.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT');
    });
  });

  describe('auditRuns', () => {
    const RUN_FIELDS =
      'edges { cursor node { id status startedAt completedAt scores { overall aiCrawl contentDecay technical } issueSummary { severity count } } } pageInfo { hasNextPage endCursor }';

    it('answers runs newest first by startedAt; a RUNNING run is newer than the completed one', async () => {
      const runs = (await onSite('site_acme_com', `auditRuns(first: 20) { ${RUN_FIELDS} }`)).auditRuns;
      const nodes = runs.edges.map((edge) => edge.node);
      assert.equal(nodes[0]?.status, 'RUNNING');
      assert.equal(nodes[0]?.completedAt, null);
      assert.equal(nodes[0]?.scores, null);
      const instants = nodes.map((node) => Date.parse(node.startedAt));
      assert.deepEqual(
        instants,
        [...instants].sort((a, b) => b - a),
      );
    });

    it('filters by status; the newest COMPLETED run is found by instant, with only severities that have findings', async () => {
      const runs = (await onSite('site_acme_com', `auditRuns(status: COMPLETED, first: 1) { ${RUN_FIELDS} }`))
        .auditRuns;
      assert.equal(runs.edges.length, 1);
      assert.equal(runs.pageInfo.hasNextPage, true);
      const run = runs.edges[0]?.node;
      assert.ok(run?.completedAt);
      assert.equal(run.status, 'COMPLETED');
      assert.match(run.id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(run.startedAt.endsWith('-05:00') && run.completedAt.endsWith('-05:00'));
      assert.deepEqual(run.scores, { overall: 82.5, aiCrawl: null, contentDecay: 64, technical: 91.25 });
      assert.deepEqual(run.issueSummary, [
        { severity: 'CRITICAL', count: 3 },
        { severity: 'WARNING', count: 17 },
      ]);

      const next = (
        await onSite(
          'site_acme_com',
          `auditRuns(status: COMPLETED, first: 5, after: $after) { ${RUN_FIELDS} }`,
          { after: runs.pageInfo.endCursor },
          '($after: String)',
        )
      ).auditRuns;
      assert.equal(next.edges.length, 2);
      assert.ok(next.edges.every((edge) => edge.node.status === 'COMPLETED'));
      assert.ok(
        (next.edges[0]?.node.startedAt ?? '') > run.startedAt,
        'its text sorts after, though it started earlier',
      );
    });

    it('answers no completed run for a site without one, and none at all for a site without audits', async () => {
      const newsite = (await onSite('site_newsite_io', `auditRuns(status: COMPLETED) { ${RUN_FIELDS} }`)).auditRuns;
      assert.deepEqual(newsite.edges, []);
      const statuses = (await onSite('site_newsite_io', 'auditRuns { edges { node { status } } }')).auditRuns.edges;
      assert.deepEqual(
        statuses.map((edge) => edge.node.status),
        ['RUNNING', 'FAILED'],
      );
      assert.deepEqual((await onSite('site_quiet_dev', 'auditRuns { edges { cursor } } ')).auditRuns.edges, []);
    });

    it('pages issues of a run by severity (internal field)', async () => {
      const site = await onSite(
        'site_acme_com',
        'auditRuns(status: COMPLETED, first: 1) { edges { node { issues(first: 10, severity: WARNING) { edges { node { severity title pageUrl } } pageInfo { hasNextPage } } } } }',
      );
      const issues = site.auditRuns.edges[0]?.node.issues;
      assert.ok(issues);
      assert.equal(issues.edges.length, 10);
      assert.equal(issues.pageInfo.hasNextPage, true);
      assert.ok(
        issues.edges.every(
          (edge) => edge.node.severity === 'WARNING' && edge.node.pageUrl.startsWith('https://acme.com/'),
        ),
      );
    });
  });
});
