import assert from 'node:assert/strict';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { UpstreamError } from '../../src/errors.js';
import type { Admission } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createUsageBuffer } from '../../src/usage/createUsageBuffer.js';
import type { UsageEvent, UsageSink } from '../../src/usage/usageEvent.js';
import type { UsageRecorder } from '../../src/usage/usageRecorder.js';
import { fakeServices, PLATFORM_URL } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keywordsData } from '../support/platformAnswers.js';

const PLATFORM = new URL(PLATFORM_URL);
const NOW = new Date('2026-11-21T12:00:15.000Z');

/** The key service's usage endpoint, in memory: fails the first `failures` calls, then counts by id. */
class KeyServiceUsage implements UsageSink {
  readonly calls: UsageEvent[][] = [];
  readonly counted = new Map<string, UsageEvent>();
  constructor(private failures: number) {}

  async recordUsage(events: readonly UsageEvent[]) {
    this.calls.push([...events]);
    if (this.failures > 0) {
      this.failures -= 1;
      throw new UpstreamError('key-service', 'unreachable', 'usage: connection refused');
    }
    let accepted = 0;
    for (const event of events) {
      if (!this.counted.has(event.id)) accepted += 1;
      this.counted.set(event.id, event);
    }
    return { accepted, duplicates: events.length - accepted };
  }
}

interface GraphqlBody {
  variables: { site?: string };
}

/** The platform, by site: ok.com answers, gone.com has no such site, broken.com fails, busy.com throttles. */
function platformBySite(counts: Record<'ok.com' | 'gone.com' | 'broken.com' | 'busy.com', number>): nock.Scope {
  const forSite = (site: string) => (body: GraphqlBody) => body.variables.site === site;
  return nock(PLATFORM.origin)
    .post(PLATFORM.pathname, forSite('ok.com'))
    .times(counts['ok.com'])
    .reply(200, { data: keywordsData() })
    .post(PLATFORM.pathname, forSite('gone.com'))
    .times(counts['gone.com'])
    .reply(200, { data: { organization: { siteLookup: [] } } })
    .post(PLATFORM.pathname, forSite('broken.com'))
    .times(counts['broken.com'])
    .reply(500, 'internal error')
    .post(PLATFORM.pathname, forSite('busy.com'))
    .times(counts['busy.com'])
    .reply(429, 'slow down', { 'Retry-After': '3' });
}

describe('usage metering over HTTP', () => {
  let sink: KeyServiceUsage;
  let usage: UsageRecorder;
  let limiter: Admission;
  let server: Awaited<ReturnType<typeof listen>>;

  const get = (token: string, site: string | null, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/v1/api/keywords${site === null ? '' : `?site=${site}`}`, {
      headers: { authorization: `Bearer ${token}`, ...headers },
    });

  beforeEach(async () => {
    sink = new KeyServiceUsage(2);
    usage = createUsageBuffer({
      sink,
      logger: pino({ level: 'silent' }),
      flushIntervalMs: 60_000,
      retryBaseMs: 5,
      now: () => NOW,
    });
    limiter = createLocalAdmission({ requests: 8, windowSeconds: 60 });
    server = await listen(createApp(fakeServices({ usage, admission: limiter, now: () => NOW })));
  });
  afterEach(async () => {
    await server.close();
    await limiter.close();
    await usage.close(1000);
  });

  it('counts exactly the 200s and 304s of a burst of mixed outcomes, once each, even when the key service fails first', async () => {
    const scope = platformBySite({ 'ok.com': 8, 'gone.com': 1, 'broken.com': 1, 'busy.com': 1 });
    const first = await get('key-org-a', 'ok.com');
    assert.equal(first.status, 200);
    await first.arrayBuffer();
    const etag = first.headers.get('etag') ?? '';

    // Organization A's allowance is 8; the first request took one. The rest of the
    // burst stays within it, so which request gets which answer is fixed.
    const burst: Array<[string, string | null, Record<string, string>, number]> = [
      ['key-org-a', 'ok.com', {}, 200],
      ['key-org-a', 'ok.com', {}, 200],
      ['key-org-a', 'ok.com', { 'if-none-match': etag }, 304],
      ['key-org-a', 'ok.com', { 'if-none-match': `W/${etag}` }, 304],
      ['key-org-a', null, {}, 400],
      ['key-org-a', 'gone.com', {}, 404],
      ['key-org-a', 'broken.com', {}, 502],
      ['key-org-b', 'ok.com', {}, 200],
      ['key-org-b', 'ok.com', {}, 200],
      ['key-org-b', 'busy.com', {}, 503],
      ['not-a-key', 'ok.com', {}, 401],
      ['not-a-key', 'ok.com', {}, 401],
    ];
    const responses = await Promise.all(burst.map(([token, site, headers]) => get(token, site, headers)));
    await Promise.all(responses.map((res) => res.arrayBuffer()));
    assert.deepEqual(
      responses.map((res) => res.status),
      burst.map(([, , , status]) => status),
    );
    // The platform's failure (502) gave its unit back: one more call fits, then the allowance is spent.
    const refunded = await get('key-org-a', 'ok.com');
    assert.equal(refunded.status, 200);
    assert.equal(refunded.headers.get('ratelimit'), '"per-organization";r=0;t=45');
    await refunded.arrayBuffer();
    const limited = await Promise.all([get('key-org-a', 'ok.com'), get('key-org-a', 'ok.com')]);
    assert.deepEqual(
      limited.map((res) => res.status),
      [429, 429],
    );
    await Promise.all(limited.map((res) => res.arrayBuffer()));
    scope.done();

    // Not yet flushed (the interval is long): still owed to the key service.
    assert.equal(usage.pendingTotal(), 8);
    await usage.close(2000);
    assert.equal(usage.pendingTotal(), 0);

    assert.equal(sink.calls.length, 3, 'two failed attempts, then accepted');
    const counted = [...sink.counted.values()];
    assert.equal(counted.length, 8);
    assert.deepEqual(counted.map((e) => e.organizationId).sort(), [
      'org_a',
      'org_a',
      'org_a',
      'org_a',
      'org_a',
      'org_a',
      'org_b',
      'org_b',
    ]);
    for (const event of counted) {
      assert.equal(event.route, '/v1/api/keywords');
      assert.equal(event.at, NOW.toISOString());
      assert.equal(event.keyId, event.organizationId === 'org_a' ? 'key_a' : 'key_b');
    }
  });
});
