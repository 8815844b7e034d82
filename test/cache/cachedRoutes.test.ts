import assert from 'node:assert/strict';
import nock from 'nock';
import { createApp } from '../../src/app.js';
import { createAnswerCache } from '../../src/cache/createAnswerCache.js';
import { fakeServices, PLATFORM_URL, type RecordedUsage, recordingUsage } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData } from '../support/platformAnswers.js';

const T0 = Date.parse('2026-11-21T12:00:00.000Z');
const PLATFORM = new URL(PLATFORM_URL);

interface GraphqlBody {
  variables: { organizationId?: string };
}

describe('cached answers over HTTP', () => {
  let clock: number;
  let usage: RecordedUsage;
  let server: Awaited<ReturnType<typeof listen>>;
  // Requests the gateway has received since it started.
  let arrived: number;

  const getSite = (token: string, site: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/api/keywords?site=${encodeURIComponent(site)}`, {
      headers: { authorization: `Bearer ${token}`, ...headers },
    });
  const get = (token: string, headers: Record<string, string> = {}) => getSite(token, 'example.com', headers);
  const echoedSite = async (res: Response) => ((await res.json()) as { data: { site: string } }).data.site;

  /** The platform answers `times` Keywords calls; each answer names the organization asked for. */
  const platformAnswers = (times: number, delayMs = 0) =>
    nock(PLATFORM.origin)
      .post(PLATFORM.pathname)
      .times(times)
      .delay(delayMs)
      .reply(200, (_uri, body) => {
        const organizationId = (body as GraphqlBody).variables.organizationId ?? 'none';
        return { data: keywordsData(`kw-${organizationId}`) };
      });

  const serve = async (ttlSeconds: number) => {
    const app = createApp(
      fakeServices({
        usage,
        now: () => new Date(clock),
        cache: createAnswerCache({ ttlSeconds, now: () => new Date(clock) }),
      }),
    );
    arrived = 0;
    server = await listen({
      callback: () => {
        const handle = app.callback();
        return (req, res) => {
          arrived += 1;
          return handle(req, res);
        };
      },
    });
  };

  beforeEach(() => {
    clock = T0;
    usage = recordingUsage();
  });
  afterEach(async () => {
    await server.close();
  });

  it('serves repeated requests from the cache with validators and cache fields, until the TTL passes', async () => {
    await serve(30);
    const scope = platformAnswers(2);
    const first = await get('key-org-a');
    const firstBody = await first.text();
    assert.equal(first.status, 200);
    assert.match(first.headers.get('etag') ?? '', /^"[A-Za-z0-9_-]{27}"$/);
    assert.equal(first.headers.get('cache-control'), 'private, max-age=30');
    assert.equal(first.headers.get('vary'), 'Authorization, X-API-Key');
    assert.equal(first.headers.get('cache-status'), 'gateway; fwd=miss');
    assert.equal(first.headers.get('age'), null);

    clock = T0 + 10_000;
    const second = await get('key-org-a');
    assert.equal(await second.text(), firstBody);
    assert.equal(second.headers.get('etag'), first.headers.get('etag'));
    assert.equal(second.headers.get('cache-status'), 'gateway; hit; ttl=20');
    assert.equal(second.headers.get('age'), '10');
    assert.equal(scope.pendingMocks().length, 1, 'one platform call so far');

    clock = T0 + 30_000;
    const third = await get('key-org-a');
    await third.arrayBuffer();
    assert.equal(third.headers.get('cache-status'), 'gateway; fwd=miss');
    scope.done();
    assert.equal(usage.events.length, 3, 'a cached answer still counts as usage');
  });

  it('makes one platform call for identical requests in flight together', async () => {
    await serve(30);
    let calls = 0;
    // The platform answers once all six requests reached the gateway (and 100 ms more, for the last to join
    // the call in flight), however slowly a busy machine opens their connections.
    const scope = nock(PLATFORM.origin)
      .post(PLATFORM.pathname)
      .reply(200, (_uri, _body, callback) => {
        calls += 1;
        const answer = () => callback(null, { data: keywordsData() });
        const waitForAll = () => (arrived >= 6 ? setTimeout(answer, 100) : setTimeout(waitForAll, 10));
        waitForAll();
      });
    const responses = await Promise.all(Array.from({ length: 6 }, () => get('key-org-a')));
    const bodies = await Promise.all(responses.map((res) => res.text()));
    assert.deepEqual(
      responses.map((res) => res.status),
      [200, 200, 200, 200, 200, 200],
    );
    assert.equal(new Set(bodies).size, 1);
    assert.equal(calls, 1);
    const statuses = responses.map((res) => res.headers.get('cache-status')).sort();
    assert.deepEqual(statuses, [
      'gateway; fwd=miss',
      ...Array.from({ length: 5 }, () => 'gateway; fwd=miss; collapsed'),
    ]);
    scope.done();
    assert.equal(usage.events.length, 6);
  });

  it('never serves one organization an answer cached for another', async () => {
    await serve(30);
    const scope = platformAnswers(2);
    const a = await get('key-org-a');
    const b = await get('key-org-b');
    const bodyA = (await a.json()) as { data: { keywords: Array<{ keyword: string }> } };
    const bodyB = (await b.json()) as { data: { keywords: Array<{ keyword: string }> } };
    assert.equal(bodyA.data.keywords[0]?.keyword, 'kw-org_a');
    assert.equal(bodyB.data.keywords[0]?.keyword, 'kw-org_b');
    assert.equal(b.headers.get('cache-status'), 'gateway; fwd=miss');
    const againA = (await (await get('key-org-a')).json()) as typeof bodyA;
    assert.equal(againA.data.keywords[0]?.keyword, 'kw-org_a');
    scope.done();
  });

  it('answers 304 without a body to If-None-Match with the current tag, and counts it as usage', async () => {
    await serve(30);
    const scope = platformAnswers(1);
    const first = await get('key-org-a');
    await first.arrayBuffer();
    const etag = first.headers.get('etag') ?? '';

    const unchanged = await get('key-org-a', { 'if-none-match': `"other", W/${etag}` });
    assert.equal(unchanged.status, 304);
    assert.equal(await unchanged.text(), '');
    assert.equal(unchanged.headers.get('etag'), etag);
    assert.equal(unchanged.headers.get('cache-control'), 'private, max-age=30');
    assert.equal(unchanged.headers.get('vary'), 'Authorization, X-API-Key');

    const changed = await get('key-org-a', { 'if-none-match': '"not-the-tag"' });
    assert.equal(changed.status, 200);
    await changed.arrayBuffer();
    scope.done();
    assert.deepEqual(
      usage.events.map((e) => e.organizationId),
      ['org_a', 'org_a', 'org_a'],
    );
  });

  it('stands in a recent answer, flagged stale, when the platform fails; with nothing cached the 502 stands', async () => {
    await serve(30);
    const ok = platformAnswers(1);
    const fresh = await get('key-org-a');
    const freshBody = await fresh.text();
    ok.done();

    clock = T0 + 120_000;
    const down = nock(PLATFORM.origin).post(PLATFORM.pathname).times(2).reply(500, 'boom');
    const stale = await get('key-org-a');
    assert.equal(stale.status, 200);
    assert.equal(await stale.text(), freshBody);
    assert.equal(stale.headers.get('cache-status'), 'gateway; fwd=stale; ttl=-90; detail=stale-if-error');
    assert.equal(stale.headers.get('age'), '120');

    const nothingCached = await get('key-org-b');
    assert.equal(nothingCached.status, 502);
    const body = (await nothingCached.json()) as { errors: Array<{ code: string }> };
    assert.equal(body.errors[0]?.code, 'UPSTREAM_ERROR');
    assert.equal(nothingCached.headers.get('cache-status'), null);
    down.done();
    assert.deepEqual(
      usage.events.map((e) => e.organizationId),
      ['org_a', 'org_a'],
      'the 502 is not counted',
    );
  });

  it('serves every spelling of a domain from one platform call and one entry, each echoing its own spelling', async () => {
    await serve(30);
    const scope = platformAnswers(1);
    const spellings = ['example.com', 'Example.com', 'EXAMPLE.COM', 'eXaMpLe.CoM'];
    const answers = [];
    for (const site of spellings) {
      const res = await getSite('key-org-a', site);
      answers.push({ status: res.status, cacheStatus: res.headers.get('cache-status'), etag: res.headers.get('etag') });
      assert.equal(await echoedSite(res), site);
    }
    scope.done();
    assert.deepEqual(
      answers.map((a) => [a.status, a.cacheStatus]),
      [
        [200, 'gateway; fwd=miss'],
        [200, 'gateway; hit; ttl=30'],
        [200, 'gateway; hit; ttl=30'],
        [200, 'gateway; hit; ttl=30'],
      ],
    );
    assert.equal(new Set(answers.map((a) => a.etag)).size, spellings.length, 'different bytes, different tags');
  });

  it('answers 304 only to the tag of the spelling asked for', async () => {
    await serve(30);
    const scope = platformAnswers(1);
    const lower = await getSite('key-org-a', 'example.com');
    await lower.arrayBuffer();
    const upper = await getSite('key-org-a', 'EXAMPLE.COM');
    const upperBody = await upper.text();
    const upperTag = upper.headers.get('etag') ?? '';

    const unchanged = await getSite('key-org-a', 'EXAMPLE.COM', { 'if-none-match': upperTag });
    assert.equal(unchanged.status, 304);
    assert.equal(unchanged.headers.get('etag'), upperTag);
    await unchanged.arrayBuffer();
    const otherSpelling = await getSite('key-org-a', 'EXAMPLE.COM', {
      'if-none-match': lower.headers.get('etag') ?? '',
    });
    assert.equal(otherSpelling.status, 200);
    assert.equal(await otherSpelling.text(), upperBody);
    const lowerAgain = await getSite('key-org-a', 'example.com', { 'if-none-match': upperTag });
    assert.equal(lowerAgain.status, 200);
    assert.equal(await echoedSite(lowerAgain), 'example.com');
    scope.done();
  });

  it('shares one platform call among spellings in flight together; each still hears its own', async () => {
    await serve(30);
    const scope = platformAnswers(1, 100);
    const spellings = ['example.com', 'Example.com', 'EXAMPLE.com', 'example.COM', 'ExAmPlE.cOm', 'example.com'];
    const responses = await Promise.all(spellings.map((site) => getSite('key-org-a', site)));
    assert.deepEqual(await Promise.all(responses.map(echoedSite)), spellings);
    assert.deepEqual(
      responses.map((res) => res.status),
      spellings.map(() => 200),
    );
    scope.done();
  });

  it('keeps apart what the platform keeps apart: organizations, a trailing dot, slugs by case', async () => {
    await serve(30);
    const calls: Array<{ organizationId: string; identifier: string }> = [];
    const scope = nock(PLATFORM.origin)
      .post(PLATFORM.pathname)
      .times(5)
      .reply(200, (_uri, body) => {
        const { organizationId, site } = (body as { variables: { organizationId: string; site: string } }).variables;
        calls.push({ organizationId, identifier: site });
        return { data: keywordsData(`kw-${organizationId}`) };
      });
    const asked: Array<[token: string, site: string]> = [
      ['key-org-a', 'Example.com'],
      ['key-org-b', 'Example.com'],
      ['key-org-b', 'example.COM'],
      ['key-org-a', 'example.com.'],
      ['key-org-a', 'Example'],
      ['key-org-a', 'example'],
      ['key-org-a', 'EXAMPLE.COM'],
    ];
    for (const [token, site] of asked) {
      const res = await getSite(token, site);
      assert.equal(await echoedSite(res), site);
    }
    scope.done();
    assert.deepEqual(calls, [
      { organizationId: 'org_a', identifier: 'Example.com' },
      { organizationId: 'org_b', identifier: 'Example.com' },
      { organizationId: 'org_a', identifier: 'example.com.' },
      { organizationId: 'org_a', identifier: 'Example' },
      { organizationId: 'org_a', identifier: 'example' },
    ]);
  });

  it('with the cache off (TTL 0) asks the platform every time and says no-store', async () => {
    await serve(0);
    const scope = platformAnswers(2);
    for (let i = 0; i < 2; i++) {
      const res = await get('key-org-a');
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('cache-control'), 'no-store');
      assert.equal(res.headers.get('cache-status'), 'gateway; fwd=bypass');
      assert.match(res.headers.get('etag') ?? '', /^"/);
    }
    scope.done();
  });
});
