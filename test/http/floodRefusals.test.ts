import assert from 'node:assert/strict';
import { type Logger, pino } from 'pino';
import { createApp } from '../../src/app.js';
import { withFailedKeyBudget } from '../../src/auth/failedKeyBudget.js';
import { createKeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import type { Authenticator } from '../../src/auth/principal.js';
import { createVerificationGate } from '../../src/auth/verificationGate.js';
import { createAnswerCache } from '../../src/cache/createAnswerCache.js';
import { UpstreamError } from '../../src/errors.js';
import { REFUSAL_DELAY_MS } from '../../src/http/refusalDelay.js';
import { createRefusalLog } from '../../src/http/refusalLog.js';
import type { Verification } from '../../src/upstream/keyServiceContract.js';
import { fakeServices, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, testKey } from '../support/keys.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

const WITH_CEILING = testKey('flood org with ceiling');
const WITHOUT_CEILING = testKey('flood org without ceiling');
const NEVER_USED = testKey('flood never used before');
const KEY_SERVICE_DELAY_MS = 30;

function verificationOf(key: string, organizationId: string, ceiling: number | null): Verification {
  return {
    key: {
      id: `key_${organizationId}`,
      organizationId,
      prefix: key.slice(0, 12),
      permissions: ['read'],
      expiresAt: new Date('2099-01-01'),
      revokedAt: null,
    },
    organization: {
      id: organizationId,
      plan: 'pro',
      usage: { periodStart: new Date('2026-11-01'), periodEnd: new Date('2099-12-01'), used: 10, ceiling },
    },
  };
}

/** The gateway's auth stack (verification gate, key authenticator, failed-key budget) over a stand-in verify. */
function authStack(
  verify: (keyHash: string) => Promise<Verification | null>,
  { following, logger }: { following: boolean; logger: Logger },
): Authenticator {
  const gate = createVerificationGate(verify);
  const keyAuthenticator = createKeyAuthenticator({
    keyService: {
      verify: (keyHash) => gate.verify(keyHash),
      followEvents: () => ({ isConnected: () => following, close: async () => {} }),
    },
    ledger: testLedger(),
    now: () => new Date(),
    logger,
  });
  keyAuthenticator.start();
  return withFailedKeyBudget(keyAuthenticator, {
    perMinute: 30,
    hasSucceeded: gate.hasSucceeded,
    now: () => new Date(),
  });
}

const KNOWN = new Map<string, Verification>([
  [keyHashOf(WITH_CEILING), verificationOf(WITH_CEILING, 'org_ceiling', 1_000_000)],
  [keyHashOf(WITHOUT_CEILING), verificationOf(WITHOUT_CEILING, 'org_open', null)],
  [keyHashOf(NEVER_USED), verificationOf(NEVER_USED, 'org_new', null)],
]);

describe('a flood of made-up keys against the app, with a slow key service', () => {
  const written: string[] = [];
  let verifyCalls = 0;
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    const slowVerify = (keyHash: string) =>
      new Promise<Verification | null>((resolve) => {
        verifyCalls += 1;
        setTimeout(() => resolve(KNOWN.get(keyHash) ?? null), KEY_SERVICE_DELAY_MS);
      });
    const authenticator = authStack(slowVerify, { following: true, logger });
    const services = fakeServices({
      logger,
      authenticator,
      trustedProxyHops: 1,
      refusalDelayMs: REFUSAL_DELAY_MS,
      platform: stubPlatform(() => keywordsData()),
      cache: createAnswerCache({ ttlSeconds: 30 }),
    });
    server = await listen(createApp(services));
  });
  after(async () => {
    await server.close();
  });

  const ask = (path: string, key: string, from: string) =>
    fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': from } }).then(
      async (res) => {
        await res.arrayBuffer();
        return { status: res.status, retryAfter: res.headers.get('retry-after') };
      },
      // fetch's own message names no cause: which request, and what the connection did, for the failure's reader.
      (err: Error) => {
        const cause =
          err.cause instanceof Error
            ? `${err.cause.name} ${'code' in err.cause ? err.cause.code : ''} ${err.cause.message}`
            : '';
        throw new Error(`${err.message}: ${from} asking ${path.slice(0, 40)}: ${cause}`);
      },
    );

  it('serves every legitimate key 200 while 200 clients at once present made-up keys and hostile URLs', async function () {
    this.timeout(120_000); // each refusal closes its connection: 200 clients reconnect twice a second
    for (const key of [WITH_CEILING, WITHOUT_CEILING])
      assert.equal((await ask('/v1/api/keywords?site=a.example', key, '10.1.0.1')).status, 200);

    let flooding = true;
    const madeUp: string[] = [];
    const floodStatuses = new Map<number, number>();
    const client = async (index: number) => {
      for (let round = 0; flooding; round += 1) {
        const key = testKey(`made up ${index} ${round}`);
        madeUp.push(key);
        // Half from one address, half each from its own: the budget helps the first, the lanes the second.
        const from = index % 2 === 0 ? '10.9.9.9' : `10.8.${index}.${round % 250}`;
        const hostile =
          round % 5 === 0 ? `/v1/api/keywords/%2561tl_${key.slice(4)}` : '/v1/api/keywords?site=a.example';
        const { status } = await ask(hostile, key, from);
        floodStatuses.set(status, (floodStatuses.get(status) ?? 0) + 1);
      }
    };
    const started = performance.now();
    const flood = Array.from({ length: 200 }, (_, i) => client(i));

    const legitimate: number[] = [];
    for (let i = 0; i < 20; i += 1) {
      for (const key of [WITH_CEILING, WITHOUT_CEILING])
        legitimate.push((await ask('/v1/api/keywords?site=a.example', key, '10.1.0.1')).status);
      await new Promise((resolve) => setTimeout(resolve, 100)); // paying callers ask now and then, the flood without pause
    }
    const fresh = await ask('/v1/api/keywords?site=a.example', NEVER_USED, '10.2.0.1');
    flooding = false;
    await Promise.all(flood);
    const seconds = Math.ceil((performance.now() - started) / 1000);

    assert.deepEqual(new Set(legitimate), new Set([200]));
    assert.ok(
      fresh.status === 200 || (fresh.status === 503 && fresh.retryAfter !== null),
      `never-used key: ${fresh.status}`,
    );
    for (const status of floodStatuses.keys()) assert.ok([401, 429, 503].includes(status), `flood answered ${status}`);
    assert.ok((floodStatuses.get(429) ?? 0) > 0, 'the one busy address spent its budget');
    assert.ok(verifyCalls < madeUp.length, 'not every made-up key reached the key service');

    const log = written.join('');
    for (const key of [...madeUp, WITH_CEILING, WITHOUT_CEILING, NEVER_USED]) {
      assert.ok(!log.includes(key.slice(4, 24)), 'no key text in the log');
    }
    assert.doesNotMatch(log, /"stack"/, 'no stack for a refusal');
    const refusalLines = written.filter((line) => /"msg":"request"/.test(line) && /"organizationId":null/.test(line));
    assert.ok(
      refusalLines.length <= 20 * (seconds + 1),
      `${refusalLines.length} refusal lines in ${seconds} s: rationed`,
    );
  });
});

describe('the 503 of an outage (key service or Redis down)', () => {
  const PAYING = testKey('outage paying caller');
  const STRANGER = testKey('outage never seen');
  let down = false;
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const logger = pino({ level: 'silent' });
    const verify = async (keyHash: string) => {
      if (down) throw new UpstreamError('key-service', 'unreachable', 'connect ECONNREFUSED');
      return keyHash === keyHashOf(PAYING) ? verificationOf(PAYING, 'org_outage', null) : null;
    };
    // No event stream: every request is verified, so the outage reaches every request.
    const authenticator = authStack(verify, { following: false, logger });
    const services = fakeServices({
      logger,
      authenticator,
      refusalDelayMs: REFUSAL_DELAY_MS,
      platform: stubPlatform(() => keywordsData()),
    });
    server = await listen(createApp(services));
  });
  after(async () => {
    await server.close();
  });

  const timedAsk = async (key: string) => {
    const started = performance.now();
    const res = await fetch(`${server.url}/v1/api/keywords?site=a.example`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  };

  it('answers a key seen to verify at once, and still delays a key never seen to', async () => {
    assert.equal((await timedAsk(PAYING)).status, 200);
    down = true;
    const paying = await timedAsk(PAYING);
    const stranger = await timedAsk(STRANGER);
    assert.equal(paying.status, 503);
    assert.ok(paying.ms < REFUSAL_DELAY_MS / 2, `a paying caller's 503 took ${paying.ms.toFixed(0)} ms`);
    assert.equal(stranger.status, 503);
    assert.ok(stranger.ms >= REFUSAL_DELAY_MS - 5, `an unknown caller's 503 took ${stranger.ms.toFixed(0)} ms`);
  });
});

describe('refusal log', () => {
  it('writes a modest number of lines, then one summary with counts by reason', async () => {
    const lines: string[] = [];
    const refusals = createRefusalLog(pino({ level: 'info' }, { write: (line: string) => lines.push(line) }), {
      linesPerSecond: 5,
      summaryEveryMs: 20,
    });
    const admitted = Array.from({ length: 100 }, (_, i) =>
      refusals.admit(i % 2 === 0 ? 'invalid_key' : 'key_in_query'),
    );
    assert.equal(admitted.filter(Boolean).length, 5);
    await new Promise((resolve) => setTimeout(resolve, 60));
    refusals.close();
    assert.equal(lines.length, 1);
    const summary = JSON.parse(lines[0] ?? '{}') as { refused: number; byReason: Record<string, number> };
    assert.equal(summary.refused, 95);
    assert.deepEqual(summary.byReason, { invalid_key: 47, key_in_query: 48 });
  });
});
