import assert from 'node:assert/strict';
import { cacheKeyFor, siteIdentity } from '../../src/cache/answerKey.js';

describe('answer key', () => {
  it('names a site as the platform matches it: domains fold ASCII case, slugs and everything else stay', () => {
    const cases: Array<[typed: string, identity: string]> = [
      ['acme.com', 'acme.com'],
      ['Acme.COM', 'acme.com'],
      ['ACME.COM', 'acme.com'],
      ['WWW.Acme.co.UK', 'www.acme.co.uk'],
      // the platform compares a domain whole: a trailing dot is another identifier
      ['acme.com.', 'acme.com.'],
      ['Acme.com.', 'acme.com.'],
      // slugs (no dot) match exactly
      ['Acme', 'Acme'],
      ['acme', 'acme'],
      // ASCII only: the Kelvin sign and other letters outside A–Z never fold
      ['\u212Acme.com', '\u212Acme.com'],
      ['ÄCME.com', 'Äcme.com'],
      ['İstanbul.com', 'İstanbul.com'],
    ];
    for (const [typed, identity] of cases) assert.equal(siteIdentity(typed), identity, typed);
  });

  it('gives every spelling of one site the same key and hands back the site as typed', () => {
    const typed = ['acme.com', 'Acme.com', 'ACME.COM', 'aCmE.cOm'];
    const lookups = typed.map((site) => cacheKeyFor('org_a', '/v1/api/keywords', { site, limit: 50 }));
    assert.equal(new Set(lookups.map((lookup) => lookup.key)).size, 1);
    assert.deepEqual(
      lookups.map((lookup) => lookup.site),
      typed,
    );
    assert.equal(
      lookups[0]?.key,
      `org_a\u0000/v1/api/keywords\u0000${JSON.stringify({ site: 'acme.com', limit: 50 })}`,
    );
  });

  it('keeps apart what the platform keeps apart: organizations, routes, other parameters, slugs by case', () => {
    const keyOf = (organizationId: string, path: string, params: Record<string, string | number>) =>
      cacheKeyFor(organizationId, path, params).key;
    const base = keyOf('org_a', '/v1/api/keywords', { site: 'Acme.com', limit: 50 });
    const others = [
      keyOf('org_b', '/v1/api/keywords', { site: 'Acme.com', limit: 50 }),
      keyOf('org_a', '/v1/api/audit-issues', { site: 'Acme.com', limit: 50 }),
      keyOf('org_a', '/v1/api/keywords', { site: 'Acme.com', limit: 10 }),
      keyOf('org_a', '/v1/api/keywords', { site: 'acme.com.', limit: 50 }),
      keyOf('org_a', '/v1/api/keywords', { site: 'Acme', limit: 50 }),
    ];
    assert.equal(new Set([base, ...others]).size, 6);
    assert.notEqual(keyOf('org_a', '/r', { site: 'Acme' }), keyOf('org_a', '/r', { site: 'acme' }));
  });

  it('no site, no echo: the parameters are the key as they are', () => {
    assert.deepEqual(cacheKeyFor('org_a', '/r', { days: 7 }), {
      key: 'org_a\u0000/r\u0000{"days":7}',
      site: undefined,
    });
  });
});
