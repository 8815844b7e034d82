import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createApp } from '../../src/app.js';
import { PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { percentile } from '../bench/stats.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData } from '../support/platformAnswers.js';

/**
 * The platform's places as an API consumer meets them, through the whole app on loopback:
 * an export job alone on an idle instance, and a flooding organization beside a quiet one.
 */

/**
 * A platform answering every call after `delayMs`, counting the calls it holds per organization.
 * With `gather`, it holds calls until `gather` are held and answers them together (or once no call
 * arrived for `delayMs`): a count, not a race between arrivals and answers, shows how many the gateway
 * lets through at once, however busy the machine.
 */
function slowPlatform(delayMs: number, gather?: number) {
  const holding = new Map<string, number>();
  const gathered: Array<() => void> = [];
  let idle: NodeJS.Timeout | undefined;
  const answerGathered = () => {
    clearTimeout(idle);
    for (const answer of gathered.splice(0)) answer();
  };
  // At each arrival, what the arriving call's organization then held (itself included).
  const heldAtArrival = new Map<string, number[]>();
  return {
    heldAtArrival,
    callback: () => (req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const { variables } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          variables: { organizationId: string };
        };
        const organizationId = variables.organizationId;
        const held = (holding.get(organizationId) ?? 0) + 1;
        holding.set(organizationId, held);
        const arrivals = heldAtArrival.get(organizationId) ?? [];
        arrivals.push(held);
        heldAtArrival.set(organizationId, arrivals);
        const answer = () => {
          holding.set(organizationId, (holding.get(organizationId) ?? 1) - 1);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ data: keywordsData() }));
        };
        if (gather === undefined) {
          setTimeout(answer, delayMs);
          return;
        }
        gathered.push(answer);
        clearTimeout(idle);
        if (gathered.length >= gather) answerGathered();
        else idle = setTimeout(answerGathered, delayMs);
      });
    },
  };
}

describe('platform places through the app: one organization alone, and two in contention', () => {
  let platform: ReturnType<typeof slowPlatform>;
  let upstream: Awaited<ReturnType<typeof listen>>;
  let gateway: Awaited<ReturnType<typeof listen>>;

  async function start(delayMs: number, gather?: number): Promise<void> {
    platform = slowPlatform(delayMs, gather);
    upstream = await listen(platform);
    const client = createPlatformClient({ url: `${upstream.url}/graphql`, token: 't', timeoutMs: 5000 });
    gateway = await listen(createApp(fakeServices({ platform: client })));
  }
  afterEach(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  const get = async (key: string, site: string): Promise<{ status: number; ms: number }> => {
    const started = performance.now();
    const res = await fetch(`${gateway.url}/v1/api/keywords?site=${site}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  };

  it('answers an export job alone on an idle instance, 100 in flight over 300 distinct URLs, 300 × 200', async () => {
    // Calls answered 32 at a time: a quarter of the places (the old share) would never make 32.
    await start(200, PLATFORM_SHARES.inFlight / 2);
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 100 }, async () => {
        while (next < 300) {
          const site = `site-${next++}.example`;
          statuses.push((await get('key-org-a', site)).status);
        }
      }),
    );
    assert.equal(statuses.length, 300);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
    );
    // The one organization had half the instance's places at once, and never more than the instance has.
    const arrivals = platform.heldAtArrival.get('org_a') ?? [];
    assert.equal(Math.max(...arrivals), PLATFORM_SHARES.inFlight / 2);
  });

  it('serves a quiet organization (8 in flight) first beside a flood of 150, only 200s, and never a 503 to the flood', async function () {
    this.timeout(40_000);
    // Slow enough that the platform's places, not a busy machine's CPU, hold the flood back.
    const platformMs = 600;
    await start(platformMs);
    const quiet: Array<{ status: number; ms: number }> = [];
    const flood: Array<{ status: number; ms: number }> = [];
    let running = true;
    const keep = (count: number, key: string, answers: Array<{ status: number; ms: number }>) =>
      Array.from({ length: count }, async (_, client) => {
        for (let i = 0; running; i++) answers.push(await get(key, `s${client}-${i}.example`));
      });
    const callers = [...keep(150, 'key-org-a', flood), ...keep(8, 'key-org-b', quiet)];
    // Until the quiet organization has had 40 answers (five each), or the flood 320 (two each): counts, so
    // that a busy machine slows both alike.
    const floodServed = () => flood.filter((a) => a.status === 200).length;
    while (quiet.length < 40 && floodServed() < 320) await new Promise((resolve) => setTimeout(resolve, 50));
    running = false;
    await Promise.all(callers);

    // Ahead of the flood, however busy the machine: more answers for each quiet client than for each of the
    // flood's (served in turn, or in the order the calls came, they would have had as many).
    assert.ok(
      quiet.length / 8 > floodServed() / 150,
      `the quiet organization was answered ${quiet.length} times, the flood ${floodServed()} times`,
    );
    assert.deepEqual(
      quiet.filter((a) => a.status !== 200),
      [],
    );
    // Refusals, if any, are the flood's own excess (429), or its calls that waited their turn past the
    // deadline (504, on a machine too busy to turn the places over): never the gateway's 503.
    assert.deepEqual(
      flood.filter((a) => ![200, 429, 504].includes(a.status)),
      [],
    );
    // The quiet calls pass the flood's queue: on a machine however busy, they take less time
    // than the flood's calls, which wait their turn behind each other.
    const quietMedian = percentile(
      quiet.map((a) => a.ms),
      50,
    );
    const floodMedian = percentile(
      flood.map((a) => a.ms),
      50,
    );
    assert.ok(
      quietMedian < floodMedian,
      `quiet p50 ${Math.round(quietMedian)} ms, flood p50 ${Math.round(floodMedian)} ms`,
    );
  });
});
