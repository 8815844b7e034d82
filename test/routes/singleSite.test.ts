import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { singleSite } from '../../src/routes/publicRoutes.js';

describe('singleSite', () => {
  it('returns the one match', () => {
    const site = { id: 'site_1' };
    assert.equal(singleSite({ siteLookup: [site] }), site);
  });

  it('answers 404 NOT_FOUND for no match, and for no organization at all', () => {
    const notFound = (err: unknown) => err instanceof ApiError && err.code === 'NOT_FOUND' && err.status === 404;
    assert.throws(() => singleSite({ siteLookup: [] }), notFound);
    assert.throws(() => singleSite(null), notFound);
  });

  it('refuses an answer without the organization field, or without the siteLookup list, rather than calling it 404', () => {
    // Neither can happen under the schema (siteLookup is a non-null list): the platform broke it (502).
    assert.throws(() => singleSite(undefined), TypeError);
    assert.throws(() => singleSite({} as unknown as { siteLookup: string[] }), TypeError);
    assert.throws(() => singleSite({ siteLookup: null } as unknown as { siteLookup: string[] }), TypeError);
  });

  it('answers 400 BAD_REQUEST asking for the exact domain when several sites match', () => {
    assert.throws(
      () => singleSite({ siteLookup: [{ id: 'a' }, { id: 'b' }] }),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'BAD_REQUEST' && err.status === 400 && /exact domain/.test(err.message),
    );
  });

  it('refuses an answer that is not a list (the platform broke its schema), rather than calling it ambiguous', () => {
    assert.throws(() => singleSite({ siteLookup: 'two sites' as unknown as string[] }), TypeError);
    assert.throws(() => singleSite({ siteLookup: { length: 2 } as unknown as string[] }), TypeError);
  });
});
