import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { singleSite } from '../../src/routes/singleSite.js';

describe('singleSite', () => {
  it('returns the one match', () => {
    const site = { id: 'site_1' };
    assert.equal(singleSite([site]), site);
  });

  it('answers 404 NOT_FOUND for no match, and for no organization at all', () => {
    const notFound = (err: unknown) => err instanceof ApiError && err.code === 'NOT_FOUND' && err.status === 404;
    assert.throws(() => singleSite([]), notFound);
    assert.throws(() => singleSite(null), notFound);
    assert.throws(() => singleSite(undefined), notFound);
  });

  it('answers 400 BAD_REQUEST asking for the exact domain when several sites match', () => {
    assert.throws(
      () => singleSite([{ id: 'a' }, { id: 'b' }]),
      (err: unknown) =>
        err instanceof ApiError && err.code === 'BAD_REQUEST' && err.status === 400 && /exact domain/.test(err.message),
    );
  });

  it('refuses an answer that is not a list (the platform broke its schema), rather than calling it ambiguous', () => {
    assert.throws(() => singleSite('two sites' as unknown as string[]), TypeError);
    assert.throws(() => singleSite({ length: 2 } as unknown as string[]), TypeError);
  });
});
