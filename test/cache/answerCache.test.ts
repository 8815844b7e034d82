import assert from 'node:assert/strict';
import { cacheKeyFor } from '../../src/cache/answerKey.js';
import { createAnswerCache } from '../../src/cache/createAnswerCache.js';
import { ApiError, UpstreamError } from '../../src/errors.js';

const T0 = Date.parse('2026-11-21T12:00:00.000Z');

describe('answer cache', () => {
  let clock: number;
  let loads: number;
  const now = () => new Date(clock);
  const loadOf = (payload: unknown) => async () => {
    loads += 1;
    return payload;
  };
  const failing = (err: Error) => async () => {
    loads += 1;
    throw err;
  };
  const platformDown = () => new UpstreamError('platform', 'unreachable', 'connection refused');

  beforeEach(() => {
    clock = T0;
    loads = 0;
  });

  it('serves a stored answer while it is fresh, then loads again', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    const first = await cache.get('org_a\0/r\0{}', loadOf({ n: 1 }));
    assert.equal(first.status, 'miss');
    assert.equal(first.answer.body, '{"data":{"n":1},"meta":{},"errors":[]}');
    clock = T0 + 29_999;
    const second = await cache.get('org_a\0/r\0{}', loadOf({ n: 2 }));
    assert.deepEqual(second, { answer: first.answer, status: 'hit', ageSeconds: 29 });
    clock = T0 + 30_000;
    const third = await cache.get('org_a\0/r\0{}', loadOf({ n: 3 }));
    assert.equal(third.status, 'miss');
    assert.equal(third.answer.body, '{"data":{"n":3},"meta":{},"errors":[]}');
    assert.notEqual(third.answer.etag, first.answer.etag);
    assert.equal(loads, 2);
  });

  it('makes one platform call for identical requests that arrive together', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    let release: (value: unknown) => void = () => undefined;
    const slow = () => {
      loads += 1;
      return new Promise((resolve) => (release = resolve));
    };
    const pending = Array.from({ length: 5 }, () => cache.get('k', slow));
    release({ ok: true });
    const results = await Promise.all(pending);
    assert.equal(loads, 1);
    assert.deepEqual(
      results.map((r) => [r.status, r.collapsed]),
      [
        ['miss', false],
        ['miss', true],
        ['miss', true],
        ['miss', true],
        ['miss', true],
      ],
    );
    assert.equal(new Set(results.map((r) => r.answer.etag)).size, 1);
  });

  it('never stores a failure: every waiter gets it, and the next request tries again', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    let fail: (err: Error) => void = () => undefined;
    const slow = () => {
      loads += 1;
      return new Promise((_, reject) => (fail = reject));
    };
    const waiters = Array.from({ length: 3 }, async () => cache.get('k', slow));
    fail(platformDown());
    for (const waiter of waiters) await assert.rejects(waiter, (err: unknown) => err instanceof UpstreamError);
    const next = await cache.get('k', loadOf({ ok: true }));
    assert.equal(next.status, 'miss');
    assert.equal(loads, 2);
  });

  it('keeps organizations apart: the same route and parameters for two organizations are two entries', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    const a = await cache.get('org_a\0/v1/api/keywords\0{"site":"x"}', loadOf({ org: 'a' }));
    const b = await cache.get('org_b\0/v1/api/keywords\0{"site":"x"}', loadOf({ org: 'b' }));
    assert.equal(loads, 2);
    assert.notEqual(a.answer.body, b.answer.body);
    const againB = await cache.get('org_b\0/v1/api/keywords\0{"site":"x"}', loadOf({ org: 'a' }));
    assert.equal(againB.answer.body, b.answer.body);
  });

  it('stale-if-error: a platform failure is answered with an answer loaded in the last staleSeconds', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    const stored = await cache.get('k', loadOf({ n: 1 }));
    clock = T0 + 300_000;
    const stale = await cache.get('k', failing(platformDown()));
    assert.deepEqual(stale, { answer: stored.answer, status: 'stale', ageSeconds: 300, collapsed: false });
    clock = T0 + 300_001;
    await assert.rejects(
      async () => cache.get('k', failing(platformDown())),
      (err: unknown) => err instanceof UpstreamError,
    );
    // Once too old, the answer is gone for good, even for a later failure.
    await assert.rejects(
      async () => cache.get('k', failing(new UpstreamError('platform', 'timeout', 'slow'))),
      UpstreamError,
    );
  });

  it('stale-if-error applies to platform failures only, not to answers such as "no such site"', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now });
    await cache.get('k', loadOf({ n: 1 }));
    clock = T0 + 60_000;
    await assert.rejects(
      async () => cache.get('k', failing(new ApiError('NOT_FOUND', 'No such site.', { reason: 'site_not_found' }))),
      (err: unknown) => err instanceof ApiError && err.code === 'NOT_FOUND',
    );
  });

  it('stays within its size bound, dropping the least recently used answers', async () => {
    const cache = createAnswerCache({ ttlSeconds: 30, now, maxBytes: 2000 });
    const big = 'x'.repeat(500);
    for (const key of ['a', 'b', 'c', 'd', 'e']) await cache.get(key, loadOf({ big, key }));
    assert.equal(loads, 5);
    await cache.get('e', loadOf({ big, key: 'e' }));
    assert.equal(loads, 5, 'the newest answer is kept');
    await cache.get('a', loadOf({ big, key: 'a' }));
    assert.equal(loads, 6, 'the oldest answer was evicted');
  });

  it('holds one entry per site however many spellings ask, so cycling them evicts nothing', async () => {
    const big = 'x'.repeat(500);
    const cache = createAnswerCache({ ttlSeconds: 30, now, maxBytes: 2000 });
    const ask = (site: string) => {
      const { key, site: typed } = cacheKeyFor('org_a', '/v1/api/keywords', { site, limit: 50 });
      return cache.get(key, loadOf({ site, big }), typed);
    };
    await ask('other.com');
    await ask('acme.com');
    const spellings = Array.from({ length: 256 }, (_, n) =>
      [...'acme.com'].map((c, i) => ((n >> i) & 1 ? c.toUpperCase() : c)).join(''),
    );
    for (const site of spellings) {
      const found = await ask(site);
      assert.equal(found.status, 'hit');
      assert.equal((JSON.parse(found.answer.body) as { data: { site: string } }).data.site, site);
    }
    assert.equal(loads, 2);
    assert.equal((await ask('other.com')).status, 'hit', 'the other site was never evicted');
  });

  it('with a TTL of 0 keeps nothing', async () => {
    const cache = createAnswerCache({ ttlSeconds: 0, now });
    await cache.get('k', loadOf(1));
    await cache.get('k', loadOf(1));
    assert.equal(loads, 2);
    assert.equal(cache.ttlSeconds, 0);
  });
});
