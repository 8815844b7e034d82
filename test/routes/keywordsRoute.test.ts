import assert from 'node:assert/strict';
import {
  type KeywordNode,
  keywordConnection,
  keywordNodes,
  keywordsAnswer,
  keywordsPageAnswer,
} from '../fixtures/platformAnswers.js';
import { useServedApp } from '../support/callApi.js';
import { PLATFORM_TOKEN } from '../support/fakeServices.js';
import { assertEveryCallScoped, mockPlatform, type PostedOperation } from '../support/platformMock.js';

interface PublicKeyword {
  keyword: string;
  position: number | null;
  unranked: boolean;
}

/** The page sizes each call asked for: [rankedFirst, unrankedFirst] for the first, `first` after. */
const pageSizes = (posted: readonly PostedOperation[]) =>
  posted.map((p) =>
    p.operationName === 'Keywords' ? [p.variables.rankedFirst, p.variables.unrankedFirst] : p.variables.first,
  );

describe('GET /v1/api/keywords', () => {
  const served = useServedApp();

  it('answers the keywords payload for the caller organization in the exact success envelope', async () => {
    const { scope, posted } = mockPlatform({
      body: keywordsAnswer(
        keywordConnection([{ keyword: 'seo', position: 3, searchVolume: 10, cluster: { label: 'core' } }], null),
        keywordConnection(
          [
            { keyword: 'aaa', position: 0, searchVolume: null, cluster: null },
            { keyword: 'bbb', position: null, searchVolume: 5, cluster: { label: 'misc' } },
          ],
          null,
        ),
      ),
    });
    const answer = await served().call('/v1/api/keywords?site=%20example.com%20');
    scope.done();
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, {
      data: {
        site: 'example.com',
        keywords: [
          { keyword: 'seo', position: 3, unranked: false, volume: 10, clusterLabel: 'core' },
          { keyword: 'aaa', position: null, unranked: true, volume: null, clusterLabel: null },
          { keyword: 'bbb', position: null, unranked: true, volume: 5, clusterLabel: 'misc' },
        ],
      },
      meta: {},
      errors: [],
    });
    assert.deepEqual(posted[0]?.variables, {
      organizationId: 'org_a',
      site: 'example.com',
      rankedFirst: 50,
      unrankedFirst: 50,
    });
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('pages through ranked keywords for limit=500, 200 at a time, following each endCursor', async () => {
    const ranked = keywordNodes('ranked ', 1000, 1);
    const { scope, posted } = mockPlatform(
      {
        body: keywordsAnswer(
          keywordConnection(ranked.slice(0, 200), 'r1'),
          keywordConnection(keywordNodes('u ', 200, null), 'u1'),
        ),
      },
      { body: keywordsPageAnswer(keywordConnection(ranked.slice(200, 400), 'r2')) },
      { body: keywordsPageAnswer(keywordConnection(ranked.slice(400, 500), 'r3')) },
    );
    const answer = await served().call('/v1/api/keywords?site=example.com&limit=500');
    scope.done();
    const keywords = (answer.body as { data: { keywords: PublicKeyword[] } }).data.keywords;
    assert.equal(keywords.length, 500);
    assert.deepEqual(
      keywords.map((k) => k.keyword),
      ranked.slice(0, 500).map((k) => k.keyword),
    );
    assert.deepEqual(pageSizes(posted), [[200, 200], 200, 100]);
    assert.deepEqual(
      posted.slice(1).map((p) => [p.operationName, p.variables.after, p.variables.ranked, p.variables.siteId]),
      [
        ['KeywordsPage', 'r1', true, 'site_1'],
        ['KeywordsPage', 'r2', true, 'site_1'],
      ],
    );
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('continues into unranked pages when ranked ones run out, unranked last by text', async () => {
    const ranked = keywordNodes('ranked ', 250, 1);
    const unranked = keywordNodes('unranked ', 600, null);
    const { scope, posted } = mockPlatform(
      {
        body: keywordsAnswer(
          keywordConnection(ranked.slice(0, 200), 'r1'),
          keywordConnection(unranked.slice(0, 200), 'u1'),
        ),
      },
      { body: keywordsPageAnswer(keywordConnection(ranked.slice(200, 250), null)) },
      { body: keywordsPageAnswer(keywordConnection(unranked.slice(200, 250), 'u2')) },
    );
    const answer = await served().call('/v1/api/keywords?site=example.com&limit=500');
    scope.done();
    const keywords = (answer.body as { data: { keywords: PublicKeyword[] } }).data.keywords;
    assert.equal(keywords.length, 500);
    assert.deepEqual(
      keywords.map((k) => k.keyword),
      [...ranked, ...unranked.slice(0, 250)].map((k) => k.keyword),
    );
    assert.ok(keywords.slice(250).every((k) => k.unranked && k.position === null));
    assert.deepEqual(pageSizes(posted), [[200, 200], 200, 50]);
    assert.deepEqual(
      posted.slice(1).map((p) => [p.variables.after, p.variables.ranked, p.variables.orderBy]),
      [
        ['r1', true, { field: 'POSITION', direction: 'ASC' }],
        ['u1', false, { field: 'KEYWORD', direction: 'ASC' }],
      ],
    );
    assertEveryCallScoped(posted, 'org_a', PLATFORM_TOKEN);
  });

  it('asks for no further page when the first one already answers', async () => {
    const { scope, posted } = mockPlatform({
      body: keywordsAnswer(
        keywordConnection(keywordNodes('ranked ', 50, 1), 'r1'),
        keywordConnection(keywordNodes('unranked ', 50, null), 'u1'),
      ),
    });
    const answer = await served().call('/v1/api/keywords?site=example.com');
    scope.done();
    assert.equal((answer.body as { data: { keywords: unknown[] } }).data.keywords.length, 50);
    assert.deepEqual(pageSizes(posted), [[50, 50]]);
  });

  it('stops when the platform has no more pages, even short of the limit', async () => {
    const { scope, posted } = mockPlatform({
      body: keywordsAnswer(
        keywordConnection(keywordNodes('r', 3, 1), null),
        keywordConnection(keywordNodes('u', 2, null), null),
      ),
    });
    const answer = await served().call('/v1/api/keywords?site=example.com&limit=500');
    scope.done();
    assert.equal((answer.body as { data: { keywords: unknown[] } }).data.keywords.length, 5);
    assert.deepEqual(pageSizes(posted), [[200, 200]]);
  });

  it('never asks for a page above 200, whatever the limit', async () => {
    for (const limit of ['200', '201', '499', '500', '501', '100000']) {
      const { scope, posted } = mockPlatform(
        { body: keywordsAnswer(keywordConnection(keywordNodes('r', 200, 1), 'r1'), keywordConnection([], null)) },
        ...(Number(limit) > 200
          ? [{ body: keywordsPageAnswer(keywordConnection(keywordNodes('r', 200, 1, 200), 'r2')) }]
          : []),
        ...(Number(limit) > 400
          ? [{ body: keywordsPageAnswer(keywordConnection(keywordNodes('r', 200, 1, 400), 'r3')) }]
          : []),
      );
      const answer = await served().call(`/v1/api/keywords?site=example.com&limit=${limit}`);
      scope.done();
      const expected = Math.min(Number(limit), 500);
      assert.equal((answer.body as { data: { keywords: unknown[] } }).data.keywords.length, expected, limit);
      for (const size of pageSizes(posted).flat())
        assert.ok(typeof size === 'number' && size <= 200, `${limit}: page ${String(size)}`);
    }
  });

  it('uses the default limit 50 for an invalid limit', async () => {
    for (const limit of ['0', '-1', 'abc', '2.5', '', '10&limit=20']) {
      const { scope, posted } = mockPlatform({
        body: keywordsAnswer(keywordConnection([], null), keywordConnection([], null)),
      });
      const answer = await served().call(`/v1/api/keywords?site=example.com&limit=${limit}`);
      scope.done();
      assert.equal(answer.status, 200);
      assert.deepEqual(pageSizes(posted), [[50, 50]], limit);
    }
  });

  it('re-orders what it got into public order (ties by code point)', async () => {
    const node = (keyword: string, position: number | null): KeywordNode => ({
      keyword,
      position,
      searchVolume: null,
      cluster: null,
    });
    const { scope } = mockPlatform({
      body: keywordsAnswer(
        keywordConnection([node('\u{1F600}', 2), node('\uE000', 2), node('a', 1)], null),
        keywordConnection([node('\u{1F600}', 0), node('\uE000', null)], null),
      ),
    });
    const answer = await served().call('/v1/api/keywords?site=example.com');
    scope.done();
    assert.deepEqual(
      (answer.body as { data: { keywords: PublicKeyword[] } }).data.keywords.map((k) => [k.keyword, k.position]),
      [
        ['a', 1],
        ['\uE000', 2],
        ['\u{1F600}', 2],
        ['\uE000', null],
        ['\u{1F600}', null],
      ],
    );
  });
});
