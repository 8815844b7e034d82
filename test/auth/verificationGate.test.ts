import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { createVerificationGate, type Verify } from '../../src/auth/verificationGate.js';
import { ApiError, toApiError, UpstreamError } from '../../src/errors.js';
import type { Verification } from '../../src/upstream/keyServiceContract.js';
import { FIXED_NOW, fakeServices, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { testKey } from '../support/keys.js';

/** An active key of an organization without a ceiling. */
const verifyAnswerFor = (id: string): Verification => ({
  key: {
    id,
    organizationId: 'org_a',
    prefix: 'atl_aaaaaaaa',
    permissions: ['read'],
    expiresAt: new Date('2027-01-01'),
    revokedAt: null,
  },
  organization: {
    id: 'org_a',
    plan: 'pro',
    usage: { periodStart: new Date('2026-11-01'), periodEnd: new Date('2026-12-01'), used: 0, ceiling: null },
  },
});

/** A verify whose calls stay open until the test answers them; it counts how many are open at once. */
function heldVerify() {
  const open: Array<{
    keyHash: string;
    answer: (verification: Verification | null) => void;
    fail: (err: Error) => void;
  }> = [];
  let mostOpen = 0;
  let calls = 0;
  const verify: Verify = (keyHash) =>
    new Promise((answer, fail) => {
      calls += 1;
      open.push({ keyHash, answer, fail });
      mostOpen = Math.max(mostOpen, open.length);
    });
  return {
    verify,
    open,
    calls: () => calls,
    mostOpen: () => mostOpen,
    /** Answers the oldest open call. */
    answerNext(verification: Verification | null) {
      const call = open.shift();
      assert.ok(call, 'a call is open');
      call.answer(verification);
    },
  };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 5));

/** Waits (bounded) until `ready` holds: answers travel through promises and, over HTTP, sockets. */
async function until(ready: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !ready(); i++) await turn();
  assert.ok(ready(), 'condition reached');
}

describe('verification gate (bounded verify calls to the key service)', () => {
  it('passes answers and failures through unchanged', async () => {
    const failure = new UpstreamError('key-service', 'timeout', 'verify: no answer in time');
    const { verify } = createVerificationGate(async (keyHash) => {
      if (keyHash === 'bad') throw failure;
      return null;
    });
    assert.equal(await verify('unknown'), null);
    await assert.rejects(verify('bad'), (err: unknown) => err === failure);
  });

  it('opens at most its places at once; the others wait their turn and are all answered', async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { initialOpen: 4 });
    const answers = Array.from({ length: 10 }, (_, i) => gate.verify(`hash-${i}`, { organizationId: `org_${i}` }));
    // Unseen keys leave a quarter of the places (one of four) to keys the fleet knows.
    await until(() => service.open.length === 3);
    await turn();
    assert.equal(service.calls(), 3, 'the other seven wait');
    assert.equal(gate.state().waiting, 7);
    for (let answered = 0; answered < 10; answered++) {
      await until(() => service.open.length > 0);
      service.answerNext(null);
    }
    assert.deepEqual(await Promise.all(answers), Array(10).fill(null));
  });

  it('grows while every place is in use and answers come back; shrinks by a quarter when the service is overloaded', async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { initialOpen: 12 });
    const known = verifyAnswerFor('known');
    const answers = Array.from({ length: 40 }, (_, i) => gate.verify(`hash-${i}`));
    await until(() => service.open.length === 9);
    for (let i = 0; i < 20; i++) {
      await until(() => service.open.length > 0);
      service.answerNext(known);
    }
    assert.ok(gate.state().open > 12, `grew: ${gate.state().open}`);
    const grown = gate.state().open;
    const overloaded = new UpstreamError('key-service', 'throttled', 'verify: status 503');
    for (let i = 0; i < 20; i++) {
      await until(() => service.open.length > 0);
      service.open.shift()?.fail(overloaded);
    }
    await Promise.allSettled(answers);
    assert.ok(gate.state().open < grown, `shrank: ${gate.state().open}`);
    assert.ok(gate.state().open >= 8, 'never below its floor');
  });

  it('refuses a waiter whose turn comes past maxWaitMs, without a call; those within it are served', async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { initialOpen: 4, maxWaitMs: 200 });
    const first = Array.from({ length: 3 }, (_, i) => gate.verify(`first-${i}`));
    await until(() => service.open.length === 3);
    const late = gate.verify('late').catch((err: unknown) => err);
    await new Promise((resolve) => setTimeout(resolve, 250));
    const onTime = gate.verify('on time');
    service.answerNext(null);
    const refused = await late;
    assert.ok(refused instanceof ApiError && refused.reason === 'verification_busy', 'waited past maxWaitMs');
    await until(() => service.open.length === 3);
    assert.deepEqual(
      service.open.map((call) => call.keyHash),
      ['first-1', 'first-2', 'on time'],
    );
    assert.equal(service.calls(), 4, 'the late one made no call');
    for (let i = 0; i < 3; i++) service.answerNext(null);
    await Promise.all([...first, onTime]);
  });

  it('serves organizations in turn: one with many waiters cannot make another wait behind all of them', async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { initialOpen: 4 });
    const known = verifyAnswerFor('known');
    // Keys seen to succeed: one large organization's four, and another's one.
    for (const keyHash of ['large-0', 'large-1', 'large-2', 'large-3', 'other']) {
      const first = gate.verify(keyHash);
      await until(() => service.open.length === 1);
      service.answerNext(known);
      await first;
    }
    const flood = Array.from({ length: 40 }, (_, i) => gate.verify(`large-${i % 4}`, { organizationId: 'org_large' }));
    await until(() => service.open.length === 4);
    const other = gate.verify('other', { organizationId: 'org_other' });
    await turn();
    service.answerNext(known);
    await until(() => service.open.length === gate.state().open);
    assert.ok(
      service.open.some((call) => call.keyHash === 'other'),
      'the other organization went first at the freed place, ahead of 36 waiting',
    );
    for (let i = 0; i < 40; i++) {
      await until(() => service.open.length > 0);
      service.answerNext(known);
    }
    await Promise.all([...flood, other]);
  });

  it("refuses with its own reason (503 verification_busy, Retry-After), never as the key service, and drops the biggest group's newest waiter first", async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { initialOpen: 8, maxWaiting: 8 });
    // Eight may wait; unseen keys run in six of the eight places.
    const blockers = Array.from({ length: 6 }, (_, i) => gate.verify(`blocker-${i}`));
    await until(() => service.open.length === 6);
    const one = Array.from({ length: 8 }, (_, i) =>
      gate.verify(`one-${i}`, { organizationId: 'org_one' }).catch((err: unknown) => err),
    );
    const other = gate.verify('other', { organizationId: 'org_other' }).catch((err: unknown) => err);
    const dropped = await one[7];
    assert.ok(dropped instanceof ApiError, 'the newest waiter of the group holding the most made room');
    assert.equal(dropped.reason, 'verification_busy');
    assert.equal(dropped.status, 503);
    assert.equal(toApiError(dropped).reason, 'verification_busy');
    assert.ok(dropped.headers['Retry-After']);
    const refused = await gate.verify('one-more', { organizationId: 'org_one' }).catch((err: unknown) => err);
    assert.ok(
      refused instanceof ApiError && refused.reason === 'verification_busy',
      'the biggest group refused a newcomer',
    );
    assert.equal(service.calls(), 6, 'no refused verification made a call');
    for (let i = 0; i < 6 + 8; i++) {
      await until(() => service.open.length > 0);
      service.answerNext(null);
    }
    await Promise.all([...blockers, ...one.slice(0, 7), other]);
  });

  it('serves keys known to the fleet before unseen ones, and keeps places free of unseen keys for them', async () => {
    const service = heldVerify();
    const fleet = new Set<string>(['known-elsewhere']);
    const gate = createVerificationGate(service.verify, {
      initialOpen: 4,
      knownKeys: {
        has: async (keyHash) => fleet.has(keyHash),
        learn: (keyHash) => fleet.add(keyHash),
        forget: (keyHash) => fleet.delete(keyHash),
      },
    });
    const unseen = Array.from({ length: 6 }, (_, i) => gate.verify(`unseen-${i}`));
    await until(() => service.open.length === 3);
    assert.equal(gate.hasSucceeded('known-elsewhere'), false);
    assert.equal(await gate.isKnown('known-elsewhere'), true, 'the fleet knows it');
    assert.equal(gate.hasSucceeded('known-elsewhere'), true, 'remembered here');
    const known = gate.verify('known-elsewhere');
    await until(() => service.open.length === 4);
    assert.equal(service.open[3]?.keyHash, 'known-elsewhere', 'started at once in the reserved place');
    service.open.splice(3, 1)[0]?.answer(null);
    assert.equal(await known, null);
    assert.equal(fleet.has('known-elsewhere'), false, 'a key that failed is forgotten by the fleet');
    service.answerNext(verifyAnswerFor('unseen-0'));
    assert.ok(await unseen[0]);
    assert.equal(fleet.has('unseen-0'), true, 'a key that succeeded is known to the fleet');
    for (let i = 0; i < 5; i++) {
      await until(() => service.open.length > 0);
      service.answerNext(null);
    }
    await Promise.all(unseen);
  });

  describe('a flood of made-up keys with valid checksums, over HTTP', () => {
    let server: Awaited<ReturnType<typeof listen>>;
    const service = heldVerify();

    before(async () => {
      const authenticator = createKeyAuthenticator({
        keyService: {
          verify: createVerificationGate(service.verify, { initialOpen: 4, maxWaiting: 4 }).verify,
          followEvents: () => ({ isConnected: () => false, close: async () => {} }),
        },
        ledger: testLedger(),
        now: () => FIXED_NOW,
        logger: pino({ level: 'silent' }),
      });
      server = await listen(createApp(fakeServices({ authenticator })));
    });
    after(async () => {
      await server.close();
    });

    it('reaches the key service with at most its unseen places; the excess gets 503 verification_busy at once, never a 500', async () => {
      const keys = Array.from({ length: 20 }, (_, i) => testKey(`flood ${i}`));
      type Answer = { status: number; body: { errors: Array<{ code: string; reason: string }> } };
      const answers = keys.map((key) =>
        fetch(`${server.url}/v1/api/keywords?site=example.com`, { headers: { authorization: `Bearer ${key}` } }).then(
          async (res): Promise<Answer> => ({ status: res.status, body: (await res.json()) as Answer['body'] }),
        ),
      );
      // 3 open (of 4 places, one kept for known keys) + 4 waiting are admitted; the other 13 are refused at once.
      const refused: Answer[] = [];
      for (const answer of answers) void answer.then((settled) => refused.push(settled));
      await until(() => service.open.length === 3 && refused.length === 13);
      await turn();
      assert.equal(refused.length, 13, 'the admitted requests are still waiting for the key service');
      assert.ok(
        refused.every((answer) => answer.status === 503 && answer.body.errors[0]?.reason === 'verification_busy'),
        "the gateway's own throttling, not the key service's outage",
      );
      // The admitted ones are verified (as unknown keys: 401), three at a time.
      for (let i = 0; i < 7; i++) {
        await until(() => service.open.length > 0);
        service.answerNext(null);
      }
      const statuses = (await Promise.all(answers)).map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 401).length, 7);
      assert.equal(statuses.filter((status) => status === 503).length, 13);
      assert.equal(service.mostOpen(), 3);
    });
  });
});
