import assert from 'node:assert/strict';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { createVerificationGate, type Verify } from '../../src/auth/verificationGate.js';
import { toApiError, UpstreamError } from '../../src/errors.js';
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

  it('never has more than maxConcurrent calls open; the others wait their turn and are all answered', async () => {
    const service = heldVerify();
    const { verify } = createVerificationGate(service.verify, { maxConcurrent: 2, maxWaiting: 10 });
    const answers = Array.from({ length: 6 }, (_, i) => verify(`hash-${i}`));
    await until(() => service.open.length === 2);
    await turn();
    assert.equal(service.calls(), 2, 'the other four wait');
    for (let answered = 0; answered < 6; answered++) {
      await until(() => service.open.length > 0);
      service.answerNext(null);
    }
    assert.deepEqual(await Promise.all(answers), Array(6).fill(null));
    assert.equal(service.mostOpen(), 2);
  });

  it('refuses at once, as a busy key service (503 with Retry-After for the caller), once maxWaiting wait', async () => {
    const service = heldVerify();
    const { verify } = createVerificationGate(service.verify, { maxConcurrent: 1, maxWaiting: 2 });
    const admitted = [verify('a'), verify('b'), verify('c')]; // one open, two waiting
    await until(() => service.open.length === 1);
    await assert.rejects(verify('d'), (err: unknown) => {
      assert.ok(err instanceof UpstreamError);
      assert.equal(err.upstream, 'key-service');
      assert.equal(err.failure, 'throttled');
      const answer = toApiError(err);
      assert.equal(answer.status, 503);
      assert.equal(answer.reason, 'key_service_unavailable');
      assert.ok(answer.headers['Retry-After']);
      return true;
    });
    assert.equal(service.calls(), 1, 'the refused verification made no call');
    for (let i = 0; i < 3; i++) {
      await until(() => service.open.length > 0);
      service.answerNext(null);
    }
    assert.deepEqual(await Promise.all(admitted), [null, null, null]);
  });

  it('serves known keys before unseen ones, and drops the oldest unseen waiter to make room for a known key', async () => {
    const service = heldVerify();
    const gate = createVerificationGate(service.verify, { maxConcurrent: 1, maxWaiting: 3 });
    const known = verifyAnswerFor('known');
    const first = gate.verify('known');
    await until(() => service.open.length === 1);
    service.answerNext(known);
    assert.equal(await first, known);
    assert.equal(gate.hasSucceeded('known'), true);
    assert.equal(gate.hasSucceeded('unseen-0'), false);

    const blocker = gate.verify('unseen-blocker'); // holds the one open call
    await until(() => service.open.length === 1);
    const unseen = [0, 1, 2].map((i) => gate.verify(`unseen-${i}`).catch((err: unknown) => err));
    const overflow = await gate.verify('unseen-3').catch((err: unknown) => err);
    assert.ok(
      overflow instanceof UpstreamError && overflow.failure === 'throttled',
      'a full queue refuses a newcomer of the lowest lane',
    );
    const again = gate.verify('known');
    const dropped = await unseen[0];
    assert.ok(
      dropped instanceof UpstreamError && dropped.failure === 'throttled',
      'the oldest unseen waiter made room',
    );

    service.answerNext(null); // the blocker: the known key is next, ahead of older unseen waiters
    assert.equal(await blocker, null);
    await until(() => service.open.length === 1);
    assert.equal(service.open[0]?.keyHash, 'known');
    service.answerNext(known);
    assert.equal(await again, known);
    for (let i = 0; i < 2; i++) {
      await until(() => service.open.length === 1);
      service.answerNext(null);
    }
    assert.deepEqual(await Promise.all(unseen.slice(1)), [null, null]);
  });

  describe('a flood of made-up keys with valid checksums, over HTTP', () => {
    let server: Awaited<ReturnType<typeof listen>>;
    const service = heldVerify();

    before(async () => {
      const authenticator = createKeyAuthenticator({
        keyService: {
          verify: createVerificationGate(service.verify, { maxConcurrent: 3, maxWaiting: 5 }).verify,
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

    it('reaches the key service with at most maxConcurrent calls; the excess gets 503 at once, never a 500', async () => {
      const keys = Array.from({ length: 20 }, (_, i) => testKey(`flood ${i}`));
      const answers = keys.map((key) =>
        fetch(`${server.url}/v1/api/keywords?site=example.com`, { headers: { authorization: `Bearer ${key}` } }).then(
          async (res) => ({ status: res.status, body: (await res.json()) as { errors: Array<{ code: string }> } }),
        ),
      );
      // 3 open + 5 waiting are admitted; the other 12 are refused without waiting for anything.
      const refused: Array<{ status: number; body: { errors: Array<{ code: string }> } }> = [];
      for (const answer of answers) void answer.then((settled) => refused.push(settled));
      await until(() => service.open.length === 3 && refused.length === 12);
      await turn();
      assert.equal(refused.length, 12, 'the admitted requests are still waiting for the key service');
      assert.ok(
        refused.every((answer) => answer.status === 503 && answer.body.errors[0]?.code === 'SERVICE_UNAVAILABLE'),
      );
      // The admitted ones are verified (as unknown keys: 401), three at a time.
      for (let i = 0; i < 8; i++) {
        await until(() => service.open.length > 0);
        service.answerNext(null);
      }
      const statuses = (await Promise.all(answers)).map((answer) => answer.status);
      assert.equal(statuses.filter((status) => status === 401).length, 8);
      assert.equal(statuses.filter((status) => status === 503).length, 12);
      assert.equal(service.mostOpen(), 3);
    });
  });
});
