import assert from 'node:assert/strict';
import nock from 'nock';
import { createApp } from '../../src/app.js';
import { authFailure } from '../../src/auth/authFailures.js';
import { presentedKeyText } from '../../src/auth/credentials.js';
import { budgetClientOf, OPEN_PER_CLIENT, withFailedKeyBudget } from '../../src/auth/failedKeyBudget.js';
import type { Authenticator } from '../../src/auth/principal.js';
import { clientAddress } from '../../src/http/requestCredentials.js';
import { fakeServices, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, testKey } from '../support/keys.js';
import { mutableClock } from '../support/mutableClock.js';

const GOOD_KEY = testKey('budget good');

describe('failed-key budget per client address', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  let innerCalls = 0;
  const succeeded = new Set<string>();
  const clock = mutableClock('2026-11-24T12:00:00.000Z');

  /** Knows GOOD_KEY only, and remembers it succeeded, as the verification gate does. */
  const inner: Authenticator = {
    async authenticate(credentials) {
      innerCalls += 1;
      const text = presentedKeyText(credentials);
      if (text !== GOOD_KEY) throw authFailure('invalid_key');
      succeeded.add(keyHashOf(text));
      return { organizationId: 'org_a', keyId: 'key_a', keyPrefix: GOOD_KEY.slice(0, 12) };
    },
  };

  before(async () => {
    const authenticator = withFailedKeyBudget(inner, {
      perMinute: 30,
      inFlight: 30, // the open-verification bound has a test of its own below
      hasSucceeded: (hash) => succeeded.has(hash),
      now: clock.now,
    });
    server = await listen(createApp(fakeServices({ authenticator, trustedProxyHops: 1 })));
  });
  after(async () => {
    await server.close();
  });

  const ask = (key: string, forwardedFor: string) =>
    fetch(`${server.url}/v1/api/keywords?site=example.com`, {
      headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor },
    }).then(async (res) => ({
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      body: (await res.json()) as { errors: Array<{ reason?: string }> },
    }));

  it('refuses unseen keys 429 with Retry-After once an address spent its budget, before any verification', async () => {
    nock(new URL(PLATFORM_URL).origin)
      .post('/graphql')
      .times(2)
      .reply(200, { data: { organization: { siteLookup: [] } } });
    assert.equal((await ask(GOOD_KEY, '10.0.0.1')).status, 404, 'a known key (no such site): it verified');
    // Concurrent callers from one address (the proxy wrote it; the caller's own entry is ignored).
    const made = Array.from({ length: 30 }, (_, i) => ask(testKey(`made up ${i}`), `1.2.3.${i}, 10.0.0.1`));
    assert.ok((await Promise.all(made)).every((answer) => answer.status === 401));
    const callsBefore = innerCalls;
    const refused = await ask(testKey('made up 31'), '10.0.0.1');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.errors[0]?.reason, 'unknown_key_budget_spent');
    assert.ok(Number(refused.retryAfter) > 0 && Number(refused.retryAfter) <= 60);
    assert.equal(innerCalls, callsBefore, 'no verification for a refused key');

    assert.equal((await ask(GOOD_KEY, '10.0.0.1')).status, 404, 'a key seen to succeed passes whatever the budget');
    assert.equal((await ask(testKey('other address'), '10.0.0.2')).status, 401, 'another address has its own budget');

    clock.advance(60_000);
    assert.equal((await ask(testKey('next minute'), '10.0.0.1')).status, 401, 'the budget comes back after a minute');
  });

  it('takes the address the trusted hops wrote, never one the caller could forge', () => {
    assert.equal(clientAddress('127.0.0.1', undefined, 1), '127.0.0.1');
    assert.equal(clientAddress('127.0.0.1', '9.9.9.9, 10.0.0.1', 0), '127.0.0.1');
    assert.equal(clientAddress('127.0.0.1', '9.9.9.9, 10.0.0.1', 1), '10.0.0.1');
    assert.equal(clientAddress('127.0.0.1', ['9.9.9.9', '10.0.0.1, 10.0.0.2'], 2), '10.0.0.1');
    assert.equal(clientAddress('127.0.0.1', '10.0.0.1', 3), '10.0.0.1');
    assert.equal(clientAddress('127.0.0.1', ' , ', 1), '127.0.0.1');
  });
});

describe('failed-key budget under concurrency', () => {
  it('lets 150 unknown keys at once from one address make at most 30 verifications; the rest get 429', async () => {
    let calls = 0;
    const slow: Authenticator = {
      async authenticate() {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
        throw authFailure('invalid_key');
      },
    };
    const clock = mutableClock('2026-11-24T12:00:00.000Z');
    const budget = withFailedKeyBudget(slow, { perMinute: 30, hasSucceeded: () => false, now: clock.now });
    const present = (seed: string) =>
      budget
        .authenticate({ authorization: `Bearer ${testKey(seed)}`, apiKeyHeader: undefined, clientAddress: '10.0.0.9' })
        .then(
          () => 'passed',
          (err: unknown) => (err as { reason?: string }).reason ?? 'other',
        );
    const outcomes: string[] = [];
    for (let round = 0; round < 5; round++) {
      outcomes.push(...(await Promise.all(Array.from({ length: 150 }, (_, i) => present(`flood ${round} ${i}`)))));
      clock.advance(5_000);
    }
    assert.equal(calls, 30, 'exactly the budget reached the key service within the minute');
    assert.equal(outcomes.filter((reason) => reason === 'invalid_key').length, 30);
    assert.equal(outcomes.filter((reason) => reason === 'unknown_key_budget_spent').length, 750 - 30);
    clock.advance(60_000);
    assert.equal(await present('next minute'), 'invalid_key', 'the next minute has its budget back');
  });

  it('lets 50 requests at once with one new key from one address share one verification: none refused', async () => {
    let calls = 0;
    const known: Authenticator = {
      async authenticate() {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 50));
        return { organizationId: 'org_a', keyId: 'key_a', keyPrefix: 'atl_' };
      },
    };
    const clock = mutableClock('2026-11-24T12:00:00.000Z');
    const budget = withFailedKeyBudget(known, { perMinute: 30, hasSucceeded: () => false, now: clock.now });
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, () =>
        budget
          .authenticate({
            authorization: `Bearer ${testKey('new export key')}`,
            apiKeyHeader: undefined,
            clientAddress: '10.0.0.9',
          })
          .then(
            () => 'passed',
            (err: unknown) => (err as { reason?: string }).reason ?? 'other',
          ),
      ),
    );
    assert.deepEqual(new Set(outcomes), new Set(['passed']));
    assert.equal(calls, 50, 'each request asked the authenticator, which makes one key-service call per key');
    assert.equal(
      await budget
        .authenticate({
          authorization: `Bearer ${testKey('another')}`,
          apiKeyHeader: undefined,
          clientAddress: '10.0.0.9',
        })
        .then(() => 'passed'),
      'passed',
      'the key spent no budget',
    );
  });

  it('never refuses a valid key as unknown: 45 new valid keys at once from one address all pass, 8 verified at a time', async () => {
    const valid = new Set(Array.from({ length: 45 }, (_, i) => keyHashOf(testKey(`nat ${i}`))));
    let open = 0;
    let mostOpen = 0;
    const service: Authenticator = {
      async authenticate(credentials) {
        open += 1;
        mostOpen = Math.max(mostOpen, open);
        await new Promise((resolve) => setTimeout(resolve, 20));
        open -= 1;
        const text = presentedKeyText(credentials);
        if (!valid.has(keyHashOf(text))) throw authFailure('invalid_key');
        return { organizationId: 'org_a', keyId: text.slice(0, 12), keyPrefix: text.slice(0, 12) };
      },
    };
    const clock = mutableClock('2026-11-24T12:00:00.000Z');
    const budget = withFailedKeyBudget(service, { perMinute: 30, hasSucceeded: () => false, now: clock.now });
    const present = (seed: string) =>
      budget
        .authenticate({ authorization: `Bearer ${testKey(seed)}`, apiKeyHeader: undefined, clientAddress: '10.0.0.7' })
        .then(
          () => 'passed',
          (err: unknown) => (err as { reason?: string }).reason ?? 'other',
        );
    // Beside them, 29 made-up keys: the budget counts those that failed, and only those.
    const outcomes = await Promise.all([
      ...Array.from({ length: 45 }, (_, i) => present(`nat ${i}`)),
      ...Array.from({ length: 29 }, (_, i) => present(`made up ${i}`)),
    ]);
    assert.deepEqual(outcomes.slice(0, 45), Array(45).fill('passed'));
    assert.deepEqual(outcomes.slice(45), Array(29).fill('invalid_key'));
    assert.equal(mostOpen, OPEN_PER_CLIENT);
    assert.equal(await present('made up 29'), 'invalid_key', 'the 30th failure is within the budget');
    assert.equal(await present('made up 30'), 'unknown_key_budget_spent');
    assert.equal(
      await present('nat 0'),
      'unknown_key_budget_spent',
      'a key not seen to succeed, once the budget is spent',
    );
  });

  it('passes a key the fleet saw succeed, whatever the budget', async () => {
    const budget = withFailedKeyBudget(
      {
        async authenticate() {
          throw authFailure('invalid_key');
        },
      },
      {
        perMinute: 1,
        hasSucceeded: () => false,
        isKnown: async (keyHash) => keyHash === keyHashOf(testKey('known elsewhere')),
        now: mutableClock('2026-11-24T12:00:00.000Z').now,
      },
    );
    const present = (seed: string) =>
      budget
        .authenticate({ authorization: `Bearer ${testKey(seed)}`, apiKeyHeader: undefined, clientAddress: '10.0.0.8' })
        .catch((err: unknown) => (err as { reason?: string }).reason);
    assert.equal(await present('a'), 'invalid_key');
    assert.equal(await present('b'), 'unknown_key_budget_spent');
    assert.equal(
      await present('known elsewhere'),
      'invalid_key',
      'verified (here: refused by the service), not budgeted',
    );
  });

  it('groups IPv6 clients by /64: 80 unknown keys from 80 addresses of one /64 spend one budget', async () => {
    let calls = 0;
    const budget = withFailedKeyBudget(
      {
        async authenticate() {
          calls += 1;
          throw authFailure('invalid_key');
        },
      },
      { perMinute: 30, hasSucceeded: () => false, now: mutableClock('2026-11-24T12:00:00.000Z').now },
    );
    const outcomes: unknown[] = [];
    for (let i = 0; i < 80; i++) {
      outcomes.push(
        await budget
          .authenticate({
            authorization: `Bearer ${testKey(`v6 ${i}`)}`,
            apiKeyHeader: undefined,
            clientAddress: `2001:db8:1:2:${i.toString(16)}::${i + 1}`,
          })
          .catch((err: unknown) => (err as { reason?: string }).reason),
      );
    }
    assert.equal(calls, 30);
    assert.equal(outcomes.filter((reason) => reason === 'unknown_key_budget_spent').length, 50);
  });

  it('names the client of an address: IPv4 as is, IPv6 by its /64, IPv4-mapped as IPv4', () => {
    assert.equal(budgetClientOf('10.1.2.3'), '10.1.2.3');
    assert.equal(budgetClientOf('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64');
    assert.equal(budgetClientOf('2001:0db8:0001:0002::1'), '2001:db8:1:2::/64');
    assert.equal(budgetClientOf('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(budgetClientOf('2001:DB8:1:2:FFFF::'), '2001:db8:1:2::/64');
    assert.equal(budgetClientOf('::1'), '0:0:0:0::/64');
    assert.equal(budgetClientOf('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(budgetClientOf('::ffff:192.0.2.7'), '192.0.2.7');
    assert.equal(budgetClientOf('64:ff9b:1:2::192.0.2.7'), '64:ff9b:1:2::/64');
    assert.equal(budgetClientOf('unknown'), 'unknown');
  });
});
