import assert from 'node:assert/strict';
import { cacheControlField, cacheStatusField, matchesIfNoneMatch } from '../../src/cache/cacheFields.js';

const answer = { body: '{}', etag: '"abc"' };

describe('cache fields', () => {
  it('If-None-Match: * , lists, and weak comparison against the current strong tag', () => {
    assert.equal(matchesIfNoneMatch('"abc"', '"abc"'), true);
    assert.equal(matchesIfNoneMatch('W/"abc"', '"abc"'), true);
    assert.equal(matchesIfNoneMatch('"x", W/"abc" , "y"', '"abc"'), true);
    assert.equal(matchesIfNoneMatch('"x","abc"', '"abc"'), true);
    assert.equal(matchesIfNoneMatch('*', '"abc"'), true);
    assert.equal(matchesIfNoneMatch(' * ', '"abc"'), true);
  });

  it('If-None-Match: other tags, partial tags, unquoted or absent values match nothing', () => {
    assert.equal(matchesIfNoneMatch(undefined, '"abc"'), false);
    assert.equal(matchesIfNoneMatch('', '"abc"'), false);
    assert.equal(matchesIfNoneMatch('"abcd"', '"abc"'), false);
    assert.equal(matchesIfNoneMatch('"ab"', '"abc"'), false);
    assert.equal(matchesIfNoneMatch('abc', '"abc"'), false);
    assert.equal(matchesIfNoneMatch('w/"abc"', '"abc"'), true, 'the quoted tag still matches; the prefix is ignored');
    assert.equal(matchesIfNoneMatch('"a"bc"', '"abc"'), false);
    assert.equal(matchesIfNoneMatch('*, "x"', '"abc"'), false);
  });

  it('Cache-Status says hit (with remaining freshness), miss, collapsed miss, stale, or bypass', () => {
    assert.equal(cacheStatusField({ answer, status: 'hit', ageSeconds: 12 }, 30), 'gateway; hit; ttl=18');
    assert.equal(cacheStatusField({ answer, status: 'miss', ageSeconds: 0 }, 30), 'gateway; fwd=miss');
    assert.equal(
      cacheStatusField({ answer, status: 'miss', ageSeconds: 0, collapsed: true }, 30),
      'gateway; fwd=miss; collapsed',
    );
    assert.equal(
      cacheStatusField({ answer, status: 'stale', ageSeconds: 70 }, 30),
      'gateway; fwd=stale; ttl=-40; detail=stale-if-error',
    );
    assert.equal(cacheStatusField({ answer, status: 'miss' }, 0), 'gateway; fwd=bypass');
  });

  it('Cache-Control is private for the cache lifetime, or no-store when the cache is off', () => {
    assert.equal(cacheControlField(30), 'private, max-age=30');
    assert.equal(cacheControlField(0), 'no-store');
  });
});
