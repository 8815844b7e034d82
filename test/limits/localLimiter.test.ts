import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import type { Admission } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { fakeServices, recordingUsage } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

const WINDOW_START = Date.parse('2026-11-21T12:00:00.000Z'); // a multiple of 60 s

describe('request limit without Redis (one process)', () => {
  let clock: number;
  let limiter: Admission;
  let server: Awaited<ReturnType<typeof listen>>;
  const usage = recordingUsage();

  const get = (token: string) =>
    fetch(`${server.url}/v1/api/keywords?site=example.com`, { headers: { authorization: `Bearer ${token}` } });

  beforeEach(async () => {
    clock = WINDOW_START + 15_000;
    usage.events.length = 0;
    limiter = createLocalAdmission({ requests: 3, windowSeconds: 60 });
    server = await listen(
      createApp(
        fakeServices({
          admission: limiter,
          usage,
          now: () => new Date(clock),
          platform: stubPlatform(() => keywordsData()),
        }),
      ),
    );
  });
  afterEach(async () => {
    await server.close();
    await limiter.close();
  });

  it('lets the allowance through, then answers 429 with Retry-After, and counts no 429 as usage', async () => {
    const statuses: number[] = [];
    const remaining: Array<string | null> = [];
    for (let i = 0; i < 5; i++) {
      const res = await get('key-org-a');
      await res.arrayBuffer();
      statuses.push(res.status);
      remaining.push(res.headers.get('ratelimit'));
    }
    assert.deepEqual(statuses, [200, 200, 200, 429, 429]);
    assert.deepEqual(remaining, [
      '"per-organization";r=2;t=45',
      '"per-organization";r=1;t=45',
      '"per-organization";r=0;t=45',
      '"per-organization";r=0;t=45',
      '"per-organization";r=0;t=45',
    ]);
    const refused = await get('key-org-a');
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), '45');
    assert.equal(refused.headers.get('ratelimit-policy'), '"per-organization";q=3;w=60');
    const body = (await refused.json()) as { errors: Array<{ code: string }> };
    assert.equal(body.errors[0]?.code, 'RATE_LIMITED');
    assert.equal(usage.events.length, 3);
  });

  it('keeps each organization to its own allowance', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await get('key-org-a')).status, 200);
    assert.equal((await get('key-org-a')).status, 429);
    const other = await get('key-org-b');
    assert.equal(other.status, 200);
    assert.equal(other.headers.get('ratelimit'), '"per-organization";r=2;t=45');
  });

  it('grants a fresh allowance when the window turns', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await get('key-org-a')).status, 200);
    clock = WINDOW_START + 59_500;
    const last = await get('key-org-a');
    assert.equal(last.status, 429);
    assert.equal(last.headers.get('retry-after'), '1');
    clock = WINDOW_START + 60_000;
    const next = await get('key-org-a');
    assert.equal(next.status, 200);
    assert.equal(next.headers.get('ratelimit'), '"per-organization";r=2;t=60');
  });

  it('lets exactly the allowance through when requests arrive at once', async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, () => get('key-org-a')));
    const statuses = responses.map((res) => res.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
    assert.equal(limiter.available(), true);
  });

  it('decides in one synchronous check: no timer, no I/O on the hot path', async () => {
    const timer = new Promise<'timer'>((resolve) => setImmediate(() => resolve('timer')));
    const decision = await Promise.race([limiter.take('org_plain', clock), timer]);
    assert.ok(decision !== 'timer', 'decided before any timer ran');
    const { allowed, limit, remaining, resetSeconds, windowSeconds } = decision;
    assert.deepEqual(
      { allowed, limit, remaining, resetSeconds, windowSeconds },
      { allowed: true, limit: 3, remaining: 2, resetSeconds: 45, windowSeconds: 60 },
    );
  });
});
