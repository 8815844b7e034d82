import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { positiveIntOrDefault, requireSite } from '../../src/routes/queryParams.js';

const badRequest = (reason: string) => (err: unknown) =>
  err instanceof ApiError && err.code === 'BAD_REQUEST' && err.status === 400 && err.reason === reason;

describe('query parameters', () => {
  describe('requireSite', () => {
    it('returns the site as given, trimmed', () => {
      assert.equal(requireSite({ site: 'example.com' }), 'example.com');
      assert.equal(requireSite({ site: '  example.com\t' }), 'example.com');
      assert.equal(requireSite({ site: 'Example' }), 'Example');
    });

    it('refuses a missing site with 400', () => {
      assert.throws(() => requireSite({}), badRequest('site_missing'));
      assert.throws(() => requireSite({ site: undefined }), badRequest('site_missing'));
    });

    it('refuses a blank or whitespace-only site with 400', () => {
      for (const site of ['', ' ', '\t\n', '\u00A0', '\u3000 ']) {
        assert.throws(() => requireSite({ site }), badRequest('site_missing'), JSON.stringify(site));
      }
    });

    it('refuses a site given more than once with 400, even when the values agree', () => {
      assert.throws(() => requireSite({ site: ['a.com', 'b.com'] }), badRequest('site_repeated'));
      assert.throws(() => requireSite({ site: ['a.com', 'a.com'] }), badRequest('site_repeated'));
      assert.throws(() => requireSite({ site: ['', 'a.com'] }), badRequest('site_repeated'));
    });
  });

  describe('positiveIntOrDefault', () => {
    const days = (raw: string | string[] | undefined) => positiveIntOrDefault(raw, 7, 90);

    it('takes a plain positive integer of decimal digits', () => {
      assert.equal(days('1'), 1);
      assert.equal(days('30'), 30);
      assert.equal(days('90'), 90);
    });

    it('reads leading zeros as decimal', () => {
      assert.equal(days('007'), 7);
      assert.equal(days('010'), 10);
      assert.equal(days('0000000000000000000000001'), 1);
    });

    it('clamps a value above the maximum, however large', () => {
      assert.equal(days('91'), 90);
      assert.equal(days('1000000'), 90);
      assert.equal(days('99999999999999999999999999999999'), 90);
      assert.equal(days('9'.repeat(400)), 90);
      assert.equal(positiveIntOrDefault('100000', 50, 500), 500);
    });

    it('uses the default for anything else', () => {
      for (const raw of ['0', '000', '-1', 'abc', '2.5', '', ' 5', '5 ', '+5', '1e2', '0x10', '5abc', '١٢', 'Infinity', 'NaN']) {
        assert.equal(days(raw), 7, JSON.stringify(raw));
      }
    });

    it('uses the default when missing or repeated', () => {
      assert.equal(days(undefined), 7);
      assert.equal(days(['5', '6']), 7);
      assert.equal(days(['5', '5']), 7);
    });
  });
});
