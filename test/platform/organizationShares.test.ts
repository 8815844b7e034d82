import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toApiError, UpstreamError } from '../../src/errors.js';
import { AiVisibilityDocument, ReadinessProbeDocument } from '../../src/generated/graphql.js';
import { PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
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
    /** Answers everything held so far. */
    releaseAll() {
      for (const { res } of held.splice(0)) {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data: ANSWER }));
      }
    },
  };
}

type Outcome = { ok: true } | { ok: false; status: number; retryAfter: string | undefined };

async function outcome(call: Promise<unknown>): Promise<Outcome> {
  try {
    await call;
    return { ok: true };
  } catch (err: unknown) {
    assert.ok(err instanceof UpstreamError, String(err));
    const shown = toApiError(err);
    return { ok: false, status: shown.status, retryAfter: shown.headers['Retry-After'] };
  }
}

describe('platform calls: per-organization shares of the instance', () => {
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

  const clientFor = () => createPlatformClient({ url: `${server.url}/graphql`, token: 't', timeoutMs: 10_000 });
  const ask = (client: ReturnType<typeof clientFor>, organizationId: string) =>
    client.request(AiVisibilityDocument, { organizationId, site: 'example.com' });

  it("answers another organization while one organization's flood of 200 cold calls holds its whole share", async () => {
    const client = clientFor();
    const flood = Array.from({ length: 200 }, () => outcome(ask(client, 'org_flood')));
    await eventually(
      'the flood holds its share',
      () => platform.heldBy('org_flood') === PLATFORM_SHARES.perOrganization,
    );

    // The quiet organization's call reaches the platform while the flood holds its share.
    const quiet = outcome(ask(client, 'org_quiet'));
    await eventually('the quiet call at the platform', () => platform.heldBy('org_quiet') === 1);
    platform.releaseAll();
    releasing = setInterval(() => platform.releaseAll(), 5);
    assert.deepEqual(await quiet, { ok: true });

    const outcomes = await Promise.all(flood);
    const served = outcomes.filter((o) => o.ok).length;
    const refused = outcomes.filter((o) => !o.ok);
    // The share runs and one share's worth waits; every further call is refused at once.
    assert.equal(served, PLATFORM_SHARES.perOrganization + PLATFORM_SHARES.queuedPerOrganization);
    assert.equal(refused.length, 200 - served);
    for (const o of refused)
      assert.deepEqual(o, { ok: false, status: 503, retryAfter: String(PLATFORM_SHARES.retryAfterSeconds) });
    assert.equal(platform.maxHeldBy.get('org_flood'), PLATFORM_SHARES.perOrganization);
  });

  it('never holds more than the overall cap at the platform, with many organizations flooding at once', async () => {
    const client = clientFor();
    const organizations = Array.from({ length: 8 }, (_, i) => `org_${i}`);
    const calls = organizations.flatMap((organizationId) =>
      Array.from({ length: 25 }, () => outcome(ask(client, organizationId))),
    );
    await eventually('the overall cap held', () => platform.held.length === PLATFORM_SHARES.overall);
    releasing = setInterval(() => platform.releaseAll(), 5);
    const outcomes = await Promise.all(calls);
    assert.equal(platform.maxHeldTotal, PLATFORM_SHARES.overall);
    for (const organizationId of organizations)
      assert.ok((platform.maxHeldBy.get(organizationId) ?? 0) <= PLATFORM_SHARES.perOrganization);
    // Whatever did not fit was refused with 503 and Retry-After, never left waiting.
    for (const o of outcomes) if (!o.ok) assert.equal(o.status, 503);
    assert.ok(outcomes.some((o) => o.ok));
  });

  it('holds each next organization to its share through the queues the earlier ones left', async () => {
    const client = clientFor();
    releasing = setInterval(() => platform.releaseAll(), 5);
    for (const organizationId of ['org_first', 'org_second', 'org_third']) {
      const outcomes = await Promise.all(Array.from({ length: 100 }, () => outcome(ask(client, organizationId))));
      assert.equal(
        outcomes.filter((o) => o.ok).length,
        PLATFORM_SHARES.perOrganization + PLATFORM_SHARES.queuedPerOrganization,
        organizationId,
      );
      assert.equal(platform.maxHeldBy.get(organizationId), PLATFORM_SHARES.perOrganization, organizationId);
    }
  });

  it('answers a call waiting for its share 504 within the deadline, counted from the request', async () => {
    // A stalled platform: nothing is ever answered. The waiting calls used to get their
    // turn only once the share's calls had used their whole deadline, then wait their own.
    const timeoutMs = 400;
    const client = createPlatformClient({ url: `${server.url}/graphql`, token: 't', timeoutMs });
    const started = performance.now();
    const calls = Array.from({ length: PLATFORM_SHARES.perOrganization + PLATFORM_SHARES.queuedPerOrganization }, () =>
      outcome(ask(client, 'org_stalled')).then((o) => ({ o, ms: performance.now() - started })),
    );
    const answered = await Promise.all(calls);
    for (const { o, ms } of answered) {
      assert.deepEqual(o, { ok: false, status: 504, retryAfter: undefined });
      // Well below two deadlines, which a waiting call took before.
      assert.ok(ms < timeoutMs * 1.75, `answered after ${Math.round(ms)} ms`);
    }
    assert.equal(platform.maxHeldBy.get('org_stalled'), PLATFORM_SHARES.perOrganization);
  });

  it("keeps the readiness probe out of the organizations' shares", async () => {
    const client = clientFor();
    const flood = Array.from({ length: 100 }, () => outcome(ask(client, 'org_flood')));
    await eventually(
      'the flood holds its share',
      () => platform.heldBy('org_flood') === PLATFORM_SHARES.perOrganization,
    );
    const probe = client.request(ReadinessProbeDocument, {});
    await eventually('the probe at the platform', () => platform.held.length === PLATFORM_SHARES.perOrganization + 1);
    releasing = setInterval(() => platform.releaseAll(), 5);
    await probe;
    await Promise.all(flood);
  });
});
