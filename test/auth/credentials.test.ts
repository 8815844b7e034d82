import assert from 'node:assert/strict';
import { presentedKeyText } from '../../src/auth/credentials.js';
import type { PresentedCredentials } from '../../src/auth/principal.js';
import { ApiError } from '../../src/errors.js';
import { testKey } from '../support/keys.js';

const KEY = testKey('credentials');
const OTHER = testKey('credentials other');

function presented(overrides: Partial<PresentedCredentials>): PresentedCredentials {
  return { authorization: undefined, apiKeyHeader: undefined, ...overrides };
}

const refusedWith = (status: number, reason: string) => (err: unknown) => {
  assert.ok(err instanceof ApiError);
  assert.equal(err.status, status);
  assert.equal(err.reason, reason);
  assert.doesNotMatch(err.message, /atl_/);
  return true;
};

describe('presentedKeyText', () => {
  it('takes the key from Authorization: Bearer, in any case of the scheme', () => {
    for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) {
      assert.equal(presentedKeyText(presented({ authorization: `${scheme} ${KEY}` })), KEY);
    }
    assert.equal(presentedKeyText(presented({ authorization: `Bearer   ${KEY}  ` })), KEY);
  });

  it('takes the key from X-API-Key', () => {
    assert.equal(presentedKeyText(presented({ apiKeyHeader: KEY })), KEY);
    assert.equal(presentedKeyText(presented({ apiKeyHeader: [KEY] })), KEY);
  });

  it('accepts both headers carrying the same key, and a repeated X-API-Key with the same value', () => {
    assert.equal(presentedKeyText(presented({ authorization: `Bearer ${KEY}`, apiKeyHeader: KEY })), KEY);
    assert.equal(presentedKeyText(presented({ apiKeyHeader: `${KEY}, ${KEY}` })), KEY);
    assert.equal(presentedKeyText(presented({ apiKeyHeader: [KEY, KEY] })), KEY);
  });

  it('refuses two different keys: both headers, repeated X-API-Key, repeated Authorization', () => {
    const conflicting = [
      presented({ authorization: `Bearer ${KEY}`, apiKeyHeader: OTHER }),
      presented({ apiKeyHeader: `${KEY}, ${OTHER}` }),
      presented({ apiKeyHeader: [KEY, OTHER] }),
      presented({ authorization: `Bearer ${KEY}`, authorizationHeaders: [`Bearer ${KEY}`, `Bearer ${OTHER}`] }),
    ];
    for (const credentials of conflicting) {
      assert.throws(() => presentedKeyText(credentials), refusedWith(401, 'conflicting_credentials'));
    }
  });

  it('refuses no key at all', () => {
    for (const credentials of [presented({}), presented({ apiKeyHeader: '' }), presented({ authorization: '  ' })]) {
      assert.throws(() => presentedKeyText(credentials), refusedWith(401, 'missing_key'));
    }
  });

  it('refuses another scheme and an empty bearer', () => {
    assert.throws(
      () => presentedKeyText(presented({ authorization: `Basic ${KEY}` })),
      refusedWith(401, 'unsupported_scheme'),
    );
    assert.throws(() => presentedKeyText(presented({ authorization: KEY })), refusedWith(401, 'unsupported_scheme'));
    assert.throws(() => presentedKeyText(presented({ authorization: 'Bearer' })), refusedWith(401, 'malformed_key'));
    assert.throws(() => presentedKeyText(presented({ authorization: 'Bearer   ' })), refusedWith(401, 'malformed_key'));
  });

  it('carries WWW-Authenticate: Bearer on every 401', () => {
    assert.throws(
      () => presentedKeyText(presented({})),
      (err: unknown) => err instanceof ApiError && err.headers['WWW-Authenticate'] === 'Bearer',
    );
  });
});
