import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toApiError } from '../../src/errors.js';
import { AiVisibilityDocument, ReadinessProbeDocument } from '../../src/generated/graphql.js';
import { createOrganizationShares, PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { DeadlineError } from '../../src/upstream/deadline.js';
import { percentile } from '../bench/stats.js';
import { eventually } from '../support/eventually.js';
import { listen } from '../support/http.js';

const ANSWER = { organization: { siteLookup: [] } };

/** A platform that holds every answer until released, counting what it holds per organization. */
function holdingPlatform() {
  const held: Array<{ organizationId: string; res: ServerResponse }> = [];
  let maxHeldTotal = 0;
  const maxHeldBy = new Map<string, number>();
  const heldBy = (organizationId: string) => held.filter((h) => h.organizationId === organizationId).length;
  return {
    held,
    maxHeldBy,
    get maxHeldTotal() {
      return maxHeldTotal;
    },
    heldBy,
    callback: () => (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { variables: { organizationId: string } };
        const { organizationId } = body.variables;
        held.push({ organizationId, res });
        maxHeldTotal = Math.max(maxHeldTotal, held.length);
        maxHeldBy.set(organizationId, Math.max(maxHeldBy.get(organizationId) ?? 0, heldBy(organizationId)));
      });
    },
    /** Answers the oldest call held. */
    releaseOne() {
      const first = held.shift();
      first?.res.writeHead(200, { 'content-type': 'application/json' });
      first?.res.end(JSON.stringify({ data: ANSWER }));
    },
    /** Answers everything held so far. */
    releaseAll() {
      for (const { res } of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: ANSWER }));
      }
    },
  };
}

type Outcome = { ok: true } | { ok: false; status: number; reason: string; retryAfter: string | undefined };

async function outcome(call: Promise<unknown>): Promise<Outcome> {
  try {
    await call;
    return { ok: true };
  } catch (err: unknown) {
    const shown = toApiError(err);
    return { ok: false, status: shown.status, reason: shown.reason, retryAfter: shown.headers['Retry-After'] };
  }
}

const REFUSED: Outcome = {
  ok: false,
  status: 429,
  reason: 'concurrency_share_exceeded',
  retryAfter: String(PLATFORM_SHARES.retryAfterSeconds),
};

describe("platform calls: a fair queue of the instance's places", () => {
  let platform: ReturnType<typeof holdingPlatform>;
  let server: Awaited<ReturnType<typeof listen>>;
  let releasing: NodeJS.Timeout | undefined;

  beforeEach(async () => {
    platform = holdingPlatform();
    server = await listen(platform);
  });
  afterEach(async () => {
    clearInterval(releasing);
    platform.releaseAll();
    await server.close();
  });

  const clientFor = (timeoutMs = 10_000) =>
    createPlatformClient({ url: `${server.url}/graphql`, token: 't', timeoutMs });
  const ask = (client: ReturnType<typeof clientFor>, organizationId: string) =>
    client.request(AiVisibilityDocument, { organizationId, site: 'example.com' });
  const { inFlight, waiting } = PLATFORM_SHARES;

  it('lets one organization alone use every place, the rest waiting rather than refused', async () => {
    const client = clientFor();
    const calls = Array.from({ length: inFlight + 100 }, () => outcome(ask(client, 'org_alone')));
    await eventually('every place in use', () => platform.heldBy('org_alone') === inFlight);
    releasing = setInterval(() => platform.releaseAll(), 5);
    const outcomes = await Promise.all(calls);
    assert.equal(outcomes.filter((o) => o.ok).length, inFlight + 100);
    assert.equal(platform.maxHeldTotal, inFlight);
  });

  it('gives freed places to the waiting organizations in turn: a quiet one waits one answer behind a flood', async () => {
    const client = clientFor();
    const flood = Array.from({ length: 150 }, () => outcome(ask(client, 'org_flood')));
    await eventually('the flood holds every place', () => platform.heldBy('org_flood') === inFlight);
    const quiet = Array.from({ length: 8 }, () => outcome(ask(client, 'org_quiet')));
    // One answer at a time: the freed places go to the two organizations in turn, the flood's first.
    for (let answered = 1; answered <= 16; answered++) {
      platform.releaseOne();
      await eventually(`answer ${answered} replaced`, () => platform.held.length === inFlight);
      assert.equal(platform.heldBy('org_quiet'), Math.floor(answered / 2), `after ${answered} answers`);
    }
    releasing = setInterval(() => platform.releaseAll(), 5);
    assert.ok((await Promise.all(quiet)).every((o) => o.ok));
    assert.ok((await Promise.all(flood)).every((o) => o.ok));
  });

  it('with the waiting room full, refuses the organization holding the most: the newcomer, or its newest waiter', async () => {
    const client = clientFor();
    const flood = Array.from({ length: inFlight + waiting }, () => outcome(ask(client, 'org_flood')));
    await eventually('every place in use', () => platform.heldBy('org_flood') === inFlight);
    // The flood's next call: it holds the most, so it is refused at once.
    assert.deepEqual(await outcome(ask(client, 'org_flood')), REFUSED);
    // Another organization's call waits; the flood's newest waiter gives up its place in the room.
    const quiet = outcome(ask(client, 'org_quiet'));
    assert.deepEqual(await flood.at(-1), REFUSED);
    releasing = setInterval(() => platform.releaseAll(), 5);
    assert.deepEqual(await quiet, { ok: true });
    const outcomes = await Promise.all(flood);
    assert.equal(outcomes.filter((o) => o.ok).length, inFlight + waiting - 1);
    assert.equal(platform.maxHeldTotal, inFlight);
  });

  it('answers a call still waiting at its deadline 504, counted from the request, and frees its place in the room', async () => {
    // A stalled platform: nothing is ever answered.
    // Long beside the work of answering the calls, which a busy machine does slowly.
    const timeoutMs = 2000;
    const client = clientFor(timeoutMs);
    const started = performance.now();
    // The control: a timer of the same deadline, which a busy machine keeps as late as the calls' own.
    const control = new Promise<number>((resolve) => setTimeout(() => resolve(performance.now() - started), timeoutMs));
    const calls = Array.from({ length: inFlight + 10 }, () =>
      outcome(ask(client, 'org_stalled')).then((o) => ({ o, ms: performance.now() - started })),
    );
    const answered = await Promise.all(calls);
    const deadline = await control;
    for (const { o, ms } of answered) {
      assert.deepEqual(o, { ok: false, status: 504, reason: 'platform_timeout', retryAfter: '5' });
      // Well short of two deadlines: a waiting call does not wait for the calls ahead to time out first.
      assert.ok(
        ms < deadline + timeoutMs * 0.75,
        `answered after ${Math.round(ms)} ms, the control timer after ${Math.round(deadline)} ms`,
      );
    }
    // Nothing waits any more: a new call reaches the platform as soon as a place is free.
    releasing = setInterval(() => platform.releaseAll(), 5);
    assert.deepEqual(await outcome(ask(clientFor(), 'org_after')), { ok: true });
  });

  it("keeps the readiness probe out of the organizations' places", async () => {
    const client = clientFor();
    const flood = Array.from({ length: 100 }, () => outcome(ask(client, 'org_flood')));
    await eventually('the flood holds every place', () => platform.heldBy('org_flood') === inFlight);
    const probe = client.request(ReadinessProbeDocument, {});
    await eventually('the probe at the platform', () => platform.held.length === inFlight + 1);
    releasing = setInterval(() => platform.releaseAll(), 5);
    await probe;
    await Promise.all(flood);
  });
});

describe("platform places on a virtual clock: the figures of contention, free of the machine's load", () => {
  it('a platform answering in 200 ms, A keeping 150 calls and B 8: B within 3 answers at p99, A over 200 answers a second', async () => {
    const PLATFORM_MS = 200;
    const shares = createOrganizationShares();
    let now = 0;
    // Calls at the virtual platform, each answered PLATFORM_MS after it started, give or take
    // 10 % (spread evenly, so that answers do not all come at the same instant).
    let atPlatform: Array<{ answerAt: number; answer: () => void }> = [];
    let calls = 0;
    const platformCall = () =>
      new Promise<void>((resolve) => {
        const spread = ((calls++ % 41) - 20) / 100;
        atPlatform.push({ answerAt: now + PLATFORM_MS * (1 + spread / 2), answer: resolve });
      });
    const answered = { A: [] as number[], B: [] as number[] };
    let running = true;
    const keep = (organization: 'A' | 'B', count: number) =>
      Array.from({ length: count }, async () => {
        while (running) {
          const asked = now;
          // Far in real time: the virtual clock, not the deadline, is what this measures.
          await shares.run(organization, platformCall, performance.now() + 60_000);
          answered[organization].push(now - asked);
        }
      });
    const callers = [...keep('A', 150), ...keep('B', 8)];
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    const seconds = 10;
    while (now < seconds * 1000) {
      now = Math.min(...atPlatform.map((call) => call.answerAt));
      const due = atPlatform.filter((call) => call.answerAt <= now);
      atPlatform = atPlatform.filter((call) => call.answerAt > now);
      for (const call of due) call.answer();
      await settle();
    }
    running = false;
    for (const call of atPlatform) call.answer();
    atPlatform = [];
    // Whatever still waits is answered as it starts.
    const drain = setInterval(() => {
      for (const call of atPlatform.splice(0)) call.answer();
    }, 1);
    await Promise.all(callers);
    clearInterval(drain);

    const bP99 = percentile(answered.B, 99);
    assert.ok(bP99 <= 3 * PLATFORM_MS, `B p99 ${bP99} ms`);
    const aPerSecond = answered.A.length / seconds;
    assert.ok(aPerSecond >= 200, `A ${aPerSecond} answers a second`);
    // Nothing idle: together they used every place.
    assert.ok(
      (answered.A.length + answered.B.length) / seconds >= (0.95 * (PLATFORM_SHARES.inFlight * 1000)) / PLATFORM_MS,
    );
  });
});

describe('platform places: what is kept per organization', () => {
  it('keeps nothing of an organization whose waiter expired while a place was being handed on', async () => {
    const shares = createOrganizationShares();
    const release: Array<() => void> = [];
    const held = () => new Promise<void>((resolve) => release.push(resolve));
    const running = Array.from({ length: PLATFORM_SHARES.inFlight }, () =>
      shares.run('org_busy', held, performance.now() + 60_000),
    );
    const late = shares.run('org_late', async () => {}, performance.now() + 5).catch((err: unknown) => err);
    // Its deadline passes before its timer runs: a place freed now finds it expired.
    const spinUntil = performance.now() + 20;
    while (performance.now() < spinUntil);
    release.shift()?.();
    assert.ok((await late) instanceof DeadlineError, 'refused as late');
    for (const answer of release.splice(0)) answer();
    await Promise.all(running);
    assert.equal(shares.tracked(), 0);
  });
});
