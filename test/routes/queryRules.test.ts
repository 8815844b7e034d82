import assert from 'node:assert/strict';
import { ApiError } from '../../src/errors.js';
import { SITE_MAX_LENGTH } from '../../src/routes/payloadSchemas.js';
import { aiVisibilityQuery, auditIssuesQuery, keywordsQuery, rankingsQuery } from '../../src/routes/publicRoutes.js';
import { parseQuery, type QueryValues, queryReader, type RouteQuery } from '../../src/routes/queryRules.js';

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

/** What Koa's ctx.query makes of a query string (koa/lib/search-params.js): repeated names become arrays. */
function koaQuery(querystring: string): QueryValues {
  const params = new URLSearchParams(querystring);
  const values: Record<string, string | string[]> = {};
  for (const name of params.keys()) {
    const all = params.getAll(name);
    values[name] = all.length <= 1 ? (all[0] ?? '') : all;
  }
  return values;
}

/** What reading a query came to: its params in order, or the refusal's reason. */
function outcome(read: () => unknown): string {
  try {
    return JSON.stringify(read());
  } catch (err: unknown) {
    if (err instanceof ApiError) return `refused ${err.reason}`;
    throw err;
  }
}

const NAMES = ['site', 'days', 'limit', 'other', '', 'Site', 'site%20', 'li%6Dit'];
const RAW_VALUES = [
  'acme.com',
  'a.com',
  '',
  '5',
  '007',
  '0',
  '-1',
  '1e2',
  '100000',
  'a%20b',
  'a+b',
  '%20acme.com',
  '%E2%80%83',
  '%35',
  'x'.repeat(SITE_MAX_LENGTH),
  'x'.repeat(SITE_MAX_LENGTH + 1),
  '~a_b-c.d',
];

/** A fixed pseudo-random sequence, so every run tries the same query strings. */
function* queryStrings(count: number): Generator<string> {
  let state = 7;
  const next = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  for (let i = 0; i < count; i++) {
    const pairs: string[] = [];
    for (let p = next(5); p >= 0; p--) {
      const name = NAMES[next(NAMES.length)] as string;
      const value = RAW_VALUES[next(RAW_VALUES.length)] as string;
      pairs.push(next(6) === 0 ? name : `${name}=${value}`);
    }
    yield pairs.join(next(8) === 0 ? '&&' : '&');
  }
}

describe('the query reader, derived from the zod declarations', () => {
  for (const [route, query] of QUERIES) {
    it(`${route}: reads every query string exactly as parseQuery reads Koa's parsed values`, () => {
      const read = queryReader(query);
      let plain = 0;
      for (const querystring of queryStrings(3000)) {
        const values = () => koaQuery(querystring);
        let usedValues = false;
        const fast = outcome(() =>
          read(querystring, () => {
            usedValues = true;
            return values();
          }),
        );
        if (!usedValues) plain += 1;
        assert.equal(
          fast,
          outcome(() => parseQuery(query, values())),
          querystring,
        );
      }
      assert.ok(plain > 100, `only ${plain} query strings were read without the parsed values`);
    });
  }

  it('reads a plain query string without asking for the parsed values', () => {
    const read = queryReader(rankingsQuery);
    const params = read('site=acme.com&limit=500&days=0&utm=x', () => assert.fail('the parsed values were asked for'));
    assert.deepEqual(params, { site: 'acme.com', days: 7, limit: 100 });
  });
});
