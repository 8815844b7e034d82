import assert from 'node:assert/strict';
import { get } from 'node:http';
import { type Logger, pino } from 'pino';
import { createApp } from '../../src/app.js';
import { withFailedKeyBudget } from '../../src/auth/failedKeyBudget.js';
import { createKeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { urlHoldsKey } from '../../src/auth/keyInUrl.js';
import type { Verification } from '../../src/upstream/keyServiceContract.js';
import { FIXED_NOW, fakeServices, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, testKey } from '../support/keys.js';
import { mutableClock } from '../support/mutableClock.js';

const KEY = testKey('key in url');
const HEADER_KEY = testKey('key in header');
/** The key without its `atl_`: its 38 characters are still the whole secret. */
const BODY = KEY.slice(4);

const pct = (text: string) => [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
const once = (text: string) => encodeURIComponent(text);
const twice = (text: string) => text.replace('a', '%2561'); // `a` → `%61` → `%2561`
const thrice = (text: string) => text.replace('a', '%252561');

/** Every way a key can ride in a request target. */
const KEY_IN_URL: ReadonlyArray<[string, string]> = [
  ['query value', `/v1/api/keywords?site=example.com&api_key=${KEY}`],
  ['query value under any name', `/v1/api/keywords?site=example.com&q=${KEY}`],
  ['query name alone', `/v1/api/keywords?site=example.com&${KEY}`],
  ['query name with a value', `/v1/api/keywords?site=example.com&${KEY}=1`],
  ['query name first', `/v1/api/keywords?${KEY}&site=example.com`],
  ['key inside a value', `/v1/api/keywords?site=example.com&note=Bearer+${KEY}`],
  ['query value encoded once', `/v1/api/keywords?site=example.com&k=${once(`x ${KEY}`)}`],
  ['query value fully escaped', `/v1/api/keywords?site=example.com&k=${pct(KEY)}`],
  ['query value double-encoded', `/v1/api/keywords?site=example.com&k=${twice(KEY)}`],
  ['query name double-encoded', `/v1/api/keywords?site=example.com&${twice(KEY)}`],
  ['query value triple-encoded', `/v1/api/keywords?site=example.com&k=${thrice(KEY)}`],
  ['uppercase mark', `/v1/api/keywords?site=example.com&k=ATL_${KEY.slice(4)}`],
  ['path segment', `/v1/api/keywords/${KEY}?site=example.com`],
  ['path segment double-encoded', `/v1/api/keywords/${twice(KEY)}`],
  ['path segment fully escaped', `/v1/api/${pct(KEY)}`],
  ['beside a malformed escape', `/v1/api/keywords?site=example.com&k=%E0%A4%A${twice(KEY)}`],
  ['key without its mark, as a value', `/v1/api/keywords?site=example.com&auth=${BODY}`],
  ['key without its mark, after Bearer', `/v1/api/keywords?site=example.com&authorization=Bearer%20${BODY}`],
  ['key without its mark, glued to letters', `/v1/api/keywords?site=example.com&k=atl${BODY}`],
  ['key without its mark, letters after it', `/v1/api/keywords?site=example.com&k=${BODY}xyz`],
  ['key without its mark, fully escaped', `/v1/api/keywords?site=example.com&k=${pct(BODY)}`],
  ['key without its mark, in the path', `/v1/api/keywords/${BODY}?site=example.com`],
  ['key-named parameter without a key', '/v1/api/keywords?site=example.com&api_key=anything'],
  ['key-named parameter in capitals', '/v1/api/keywords?site=example.com&ACCESS_TOKEN=anything'],
  ['key-named parameter with an escaped letter', '/v1/api/keywords?site=example.com&%61pikey=anything'],
];

function call(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(`${url}${path}`, { headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** An authenticator over a key service that knows no key and records every hash it is asked. */
function authenticatorKnowingNoKey(verified: string[], now: () => Date, logger: Logger) {
  return createKeyAuthenticator({
    keyService: {
      verify: async (keyHash: string): Promise<Verification | null> => {
        verified.push(keyHash);
        return null;
      },
      followEvents: () => ({ isConnected: () => false, close: async () => {} }),
    },
    ledger: testLedger(),
    now,
    logger,
  });
}

describe('a key in the URL', () => {
  const written: string[] = [];
  const verified: string[] = [];
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    const authenticator = authenticatorKnowingNoKey(verified, () => FIXED_NOW, logger);
    server = await listen(createApp(fakeServices({ logger, authenticator })));
  });
  after(async () => {
    await server.close();
  });

  for (const [form, path] of KEY_IN_URL) {
    it(`is refused 401 key_in_query with the advice to rotate: ${form}`, async () => {
      const headerSets: Array<Record<string, string>> = [
        {},
        { authorization: `Bearer ${HEADER_KEY}` },
        { 'x-api-key': HEADER_KEY },
      ];
      for (const headers of headerSets) {
        const mark = written.length;
        verified.length = 0;
        const answer = await call(server.url, path, headers);
        assert.equal(answer.status, 401, `${form} with ${JSON.stringify(Object.keys(headers))}`);
        const body = JSON.parse(answer.body) as { errors: Array<{ reason: string; message: string }> };
        assert.equal(body.errors[0]?.reason, 'key_in_query');
        assert.match(body.errors[0]?.message ?? '', /rotate/);
        assert.deepEqual(verified, [], 'no key-service call for a burned key');
        // Refusals without a valid key are logged at a rationed rate: some of these lines are counted only.
        for (const line of written.slice(mark)) {
          assert.doesNotMatch(line, /atl_[0-9a-z]{5}/i);
          assert.ok(!line.includes(BODY.slice(0, 16)), 'no fragment of the key');
        }
      }
    });
  }

  it('logged the refusals with their reason, and no key text', () => {
    assert.ok(written.some((line) => line.includes('"reason":"key_in_query"')));
  });

  it('leaves ordinary targets alone', () => {
    for (const target of [
      '/v1/api/keywords?site=example.com',
      '/v1/api/keywords?site=atlas.example.com&page=2',
      '/v1/api/keywords?site=%E0%A4%A',
      '/v1/api/rankings?site=example.com&keyword=salt%20flats',
      // As long as a key's body, but not ending in its checksum.
      `/v1/api/keywords?site=${'a'.repeat(38)}.example.com`,
      `/v1/api/keywords?site=example.com&k=${BODY.slice(0, -1)}${BODY.endsWith('0') ? '1' : '0'}`,
    ]) {
      assert.equal(urlHoldsKey(target), false, target);
    }
  });

  it('stops decoding after a bounded number of rounds', () => {
    let deep = '%61tl_x';
    for (let i = 0; i < 40; i += 1) deep = encodeURIComponent(deep);
    assert.equal(urlHoldsKey(`/v1/api/keywords?k=${deep}`), false);
    assert.equal(urlHoldsKey(`/v1/api/keywords?k=${encodeURIComponent(encodeURIComponent('%61tl_x'))}`), true);
  });
});

describe('a key in the URL beside an unknown header key', () => {
  const BUDGET = 2;
  const verified: string[] = [];
  const clock = mutableClock('2026-11-24T12:00:00.000Z');
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const logger = pino({ level: 'silent' });
    // A key service that knows no key: every header key that reaches it is unknown.
    const authenticator = authenticatorKnowingNoKey(verified, clock.now, logger);
    const budgeted = withFailedKeyBudget(authenticator, {
      perMinute: BUDGET,
      hasSucceeded: () => false,
      now: clock.now,
    });
    server = await listen(createApp(fakeServices({ logger, authenticator: budgeted, now: clock.now })));
  });
  after(async () => {
    await server.close();
  });

  const reasonOf = (answer: { body: string }) =>
    (JSON.parse(answer.body) as { errors: Array<{ reason?: string }> }).errors[0]?.reason;
  const withHeaderKey = (headerKey: string): Array<Record<string, string>> => [
    { authorization: `Bearer ${headerKey}` },
    { 'x-api-key': headerKey },
  ];

  it('spends none of the failed-key budget: the request is refused before any key is looked up', async () => {
    for (const [form, path] of KEY_IN_URL) {
      for (const headers of withHeaderKey(testKey(`unknown beside ${form}`))) {
        const answer = await call(server.url, path, headers);
        assert.equal(answer.status, 401, form);
        assert.equal(reasonOf(answer), 'key_in_query', form);
      }
    }
    assert.deepEqual(verified, []);
    // The whole budget is still there: BUDGET unknown keys are looked up and refused as invalid, then the next is not.
    const unknown = Array.from({ length: BUDGET + 1 }, (_, i) => testKey(`unknown alone ${i}`));
    const alone = [];
    for (const key of unknown)
      alone.push(await call(server.url, '/v1/api/keywords?site=example.com', { authorization: `Bearer ${key}` }));
    assert.deepEqual(
      alone.map((answer) => [answer.status, reasonOf(answer)]),
      [...unknown.slice(0, BUDGET).map(() => [401, 'invalid_key']), [429, 'unknown_key_budget_spent']],
    );
    assert.deepEqual(verified, unknown.slice(0, BUDGET).map(keyHashOf));
  });

  it('is still refused key_in_query, not 429, once the budget is spent', async () => {
    verified.length = 0;
    for (const [form, path] of KEY_IN_URL) {
      for (const headers of [{}, ...withHeaderKey(testKey(`spent beside ${form}`))]) {
        const answer = await call(server.url, path, headers);
        assert.equal(answer.status, 401, form);
        assert.equal(reasonOf(answer), 'key_in_query', form);
      }
    }
    assert.deepEqual(verified, []);
  });
});
