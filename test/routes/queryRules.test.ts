import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { aiVisibilityQuery } from '../../src/routes/aiVisibilityRoute.js';
import { auditIssuesQuery } from '../../src/routes/auditIssuesRoute.js';
import { keywordsQuery } from '../../src/routes/keywordsRoute.js';
import { SITE_MAX_LENGTH } from '../../src/routes/payloadSchemas.js';
import { parseQuery, type QueryValues, type RouteQuery } from '../../src/routes/queryRules.js';
import { rankingsQuery } from '../../src/routes/rankingsRoute.js';

/**
 * The spec's parameter rules (section 4) as a table, run over the routes' own zod
 * declarations: what the server reads is what these declarations say.
 */

const QUERIES: ReadonlyArray<[string, RouteQuery]> = [
  ['rankings', rankingsQuery],
  ['ai-visibility', aiVisibilityQuery],
  ['keywords', keywordsQuery],
  ['audit-issues', auditIssuesQuery],
];

/** [route, parameter, default, maximum] as spec section 4 states them. */
const NUMBERS: ReadonlyArray<[RouteQuery, string, number, number]> = [
  [rankingsQuery, 'days', 7, 90],
  [rankingsQuery, 'limit', 10, 100],
  [keywordsQuery, 'limit', 50, 500],
];

/** A raw value and what it means, given the parameter's default `d` and maximum `m`. */
const LENIENT: ReadonlyArray<[string | string[] | undefined, (d: number, m: number) => number]> = [
  [undefined, (d) => d],
  ['', (d) => d],
  ['1', () => 1],
  ['2', () => 2],
  ['007', () => 7],
  ['0', (d) => d],
  ['-5', (d) => d],
  ['3.5', (d) => d],
  ['1e2', (d) => d],
  [' 5', (d) => d],
  ['0x10', (d) => d],
  ['ten', (d) => d],
  ['٣', (d) => d],
  [['3', '4'], (d) => d],
  ['100000', (_d, m) => m],
  ['9'.repeat(400), (_d, m) => m],
];

const SITES: ReadonlyArray<[string | string[] | undefined, string]> = [
  ['example.com', 'example.com'],
  ['  example.com\t', 'example.com'],
  ['Example', 'Example'],
  ['x'.repeat(SITE_MAX_LENGTH), 'x'.repeat(SITE_MAX_LENGTH)],
];

const BAD_SITES: ReadonlyArray<[string | string[] | undefined, string]> = [
  [undefined, 'site_missing'],
  ['', 'site_missing'],
  [' ', 'site_missing'],
  ['\t\n', 'site_missing'],
  ['\u00A0', 'site_missing'],
  ['\u3000 ', 'site_missing'],
  [['a.com', 'b.com'], 'site_repeated'],
  [['a.com', 'a.com'], 'site_repeated'],
  [['', 'a.com'], 'site_repeated'],
  ['x'.repeat(SITE_MAX_LENGTH + 1), 'site_too_long'],
  [` ${'x'.repeat(SITE_MAX_LENGTH + 1)} `, 'site_too_long'],
];

const refusal = (reason: string) => (err: unknown) =>
  err instanceof ApiError &&
  err.code === 'BAD_REQUEST' &&
  err.status === 400 &&
  err.reason === reason &&
  err.message.length > 0;

describe('query rules, over the zod declarations of the routes', () => {
  for (const [query, name, fallback, max] of NUMBERS) {
    it(`${name}: default ${fallback}, maximum ${max}, an invalid value is never an error`, () => {
      for (const [raw, meaning] of LENIENT) {
        const values: QueryValues = { site: 'example.com', [name]: raw };
        const parsed: Record<string, unknown> = parseQuery(query, values);
        assert.equal(parsed[name], meaning(fallback, max), `${name}=${JSON.stringify(raw)}`);
      }
      for (let value = 1; value <= max + 1; value += Math.ceil(max / 17)) {
        const parsed: Record<string, unknown> = parseQuery(query, { site: 'example.com', [name]: String(value) });
        assert.equal(parsed[name], Math.min(value, max));
      }
    });
  }

  for (const [route, query] of QUERIES) {
    it(`${route}: site is echoed trimmed, and refused with its own reason when missing, blank, repeated or too long`, () => {
      for (const [raw, expected] of SITES) {
        const parsed: Record<string, unknown> = parseQuery(query, { site: raw });
        assert.equal(parsed.site, expected);
      }
      for (const [raw, reason] of BAD_SITES) {
        assert.throws(() => parseQuery(query, { site: raw, days: '3' }), refusal(reason), JSON.stringify(raw));
      }
    });

    it(`${route}: unknown parameters are ignored`, () => {
      const parsed: Record<string, unknown> = parseQuery(query, { site: 'a.com', fields: 'x', key: 'atl_x' });
      assert.equal(parsed.site, 'a.com');
      assert.equal('fields' in parsed, false);
    });
  }
});
