import assert from 'node:assert/strict';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Principal } from '../../src/auth/principal.js';
import { toApiError, UpstreamError } from '../../src/errors.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createUsageBuffer } from '../../src/usage/createUsageBuffer.js';
import type { UsageEvent, UsageSink } from '../../src/usage/usageEvent.js';
import { createUsageSpool } from '../../src/usage/usageSpool.js';
import { tempDir } from '../support/tempDir.js';

const ORG_A: Principal = { organizationId: 'org_a', keyId: 'key_a', keyPrefix: 'atl_aaaaaaaa' };
const ORG_B: Principal = { organizationId: 'org_b', keyId: 'key_b', keyPrefix: 'atl_bbbbbbbb' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A key service stand-in: answers each call with the next scripted outcome, then accepts. */
class ScriptedSink implements UsageSink {
  readonly calls: UsageEvent[][] = [];
  readonly counted = new Map<string, UsageEvent>();
  constructor(private readonly outcomes: Array<Error | 'accept'> = []) {}

  async recordUsage(events: readonly UsageEvent[]) {
    this.calls.push([...events]);
    const outcome = this.outcomes.shift() ?? 'accept';
    if (outcome instanceof Error) throw outcome;
    let accepted = 0;
    for (const event of events) {
      if (!this.counted.has(event.id)) accepted += 1;
      this.counted.set(event.id, event);
    }
    return { accepted, duplicates: events.length - accepted };
  }
}

class UsageRejectedError extends UpstreamError {
  constructor() {
    super('key-service', 'bad_answer', 'usage: status 400 invalid_request');
    this.name = 'UsageRejectedError';
  }
}

const silent = pino({ level: 'silent' });
const FIXED = new Date('2026-11-21T12:00:00.000Z');

describe('usage buffer', () => {
  it('turns each record into one event with its own id, sent in batches of at most batchSize', async () => {
    const sink = new ScriptedSink();
    const usage = createUsageBuffer({ sink, logger: silent, batchSize: 4, flushIntervalMs: 60_000, now: () => FIXED });
    for (let i = 0; i < 7; i++) usage.record(ORG_A, '/v1/api/keywords');
    for (let i = 0; i < 3; i++) usage.record(ORG_B, '/v1/api/rankings');
    assert.equal(usage.pendingTotal(), 10);

    await usage.close(2000);
    assert.deepEqual(
      sink.calls.map((call) => call.length),
      [4, 4, 2],
    );
    const events = sink.calls.flat();
    assert.equal(new Set(events.map((e) => e.id)).size, 10);
    for (const event of events) assert.match(event.id, UUID);
    assert.deepEqual(events[0], {
      ...events[0],
      keyId: 'key_a',
      organizationId: 'org_a',
      route: '/v1/api/keywords',
      at: '2026-11-21T12:00:00.000Z',
    });
    assert.deepEqual(events[9], {
      ...events[9],
      keyId: 'key_b',
      organizationId: 'org_b',
      route: '/v1/api/rankings',
      at: '2026-11-21T12:00:00.000Z',
    });
    assert.equal(usage.pendingTotal(), 0);
  });

  it('sends a full batch at once and a partial one after the flush interval', async () => {
    const sink = new ScriptedSink();
    const usage = createUsageBuffer({ sink, logger: silent, batchSize: 3, flushIntervalMs: 30 });
    try {
      for (let i = 0; i < 4; i++) usage.record(ORG_A, '/v1/api/keywords');
      await until(() => sink.calls.length === 1);
      assert.equal(sink.calls[0]?.length, 3);
      assert.equal(usage.pendingTotal(), 1);
      await until(() => sink.calls.length === 2);
      assert.equal(sink.calls[1]?.length, 1);
      await until(() => usage.pendingTotal() === 0);
    } finally {
      await usage.close(1000);
    }
  });

  it('sends a failed batch again, with the same ids, until the key service accepts it', async () => {
    const down = () => new UpstreamError('key-service', 'unreachable', 'connection refused');
    const sink = new ScriptedSink([down(), new UpstreamError('key-service', 'throttled', 'status 503'), down()]);
    const usage = createUsageBuffer({ sink, logger: silent, flushIntervalMs: 1, retryBaseMs: 5, retryMaxMs: 20 });
    try {
      usage.record(ORG_A, '/v1/api/keywords');
      usage.record(ORG_A, '/v1/api/keywords');
      usage.record(ORG_B, '/v1/api/keywords');
      await until(() => sink.calls.length >= 3);
      // Still owed while the service fails.
      assert.equal(usage.pendingTotal(), 3);
      await until(() => usage.pendingTotal() === 0);
      assert.equal(sink.calls.length, 4);
      const ids = sink.calls.map((call) => call.map((e) => e.id).join(','));
      assert.equal(new Set(ids).size, 1, 'every attempt carried the same events');
      assert.equal(sink.counted.size, 3);
    } finally {
      await usage.close(1000);
    }
  });

  it('drops only a batch the key service refuses as malformed, and goes on with the next', async () => {
    const sink = new ScriptedSink([new UsageRejectedError()]);
    const errors: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => errors.push(line) });
    const usage = createUsageBuffer({ sink, logger, batchSize: 2, flushIntervalMs: 60_000, retryBaseMs: 5 });
    for (let i = 0; i < 4; i++) usage.record(ORG_A, '/v1/api/keywords');
    await usage.close(1000);
    assert.equal(sink.calls.length, 2, 'the refused batch is not sent again');
    assert.equal(sink.counted.size, 2);
    assert.equal(usage.pendingTotal(), 0);
    assert.equal(errors.length, 1);
    assert.match(errors[0] ?? '', /"dropped":2/);
  });

  it('close() sends everything still waiting, without waiting for the flush interval', async () => {
    const sink = new ScriptedSink([new UpstreamError('key-service', 'timeout', 'no answer in time')]);
    const usage = createUsageBuffer({ sink, logger: silent, flushIntervalMs: 60_000, retryBaseMs: 10_000 });
    for (let i = 0; i < 5; i++) usage.record(ORG_B, '/v1/api/audit-issues');
    await until(() => sink.calls.length === 0);
    await usage.close(2000);
    assert.equal(sink.counted.size, 5);
    assert.equal(usage.pendingTotal(), 0);
  });

  it('refuses further calls (a busy key service: 503) once maxPending events wait, and takes them again once sent', async () => {
    const down = new UpstreamError('key-service', 'unreachable', 'refused');
    const sink = new ScriptedSink([down]);
    const usage = createUsageBuffer({
      sink,
      logger: silent,
      batchSize: 10,
      flushIntervalMs: 1,
      retryBaseMs: 20,
      retryMaxMs: 20,
      maxPending: 3,
      random: () => 0.5,
    });
    for (let i = 0; i < 3; i++) {
      usage.ensureRoom();
      usage.record(ORG_A, '/v1/api/keywords');
    }
    assert.throws(
      () => usage.ensureRoom(),
      (err: unknown) => {
        assert.equal(toApiError(err).status, 503);
        assert.equal(toApiError(err).reason, 'usage_backlog');
        return true;
      },
    );
    // The retry after the failure is accepted: the backlog is gone and calls are taken again.
    await until(() => sink.counted.size === 3);
    assert.equal(usage.pendingTotal(), 0);
    usage.ensureRoom();
    await usage.close(100);
  });

  it('close() gives up at its deadline when the key service stays down, and says how many were lost', async () => {
    const failures = Array.from({ length: 1000 }, () => new UpstreamError('key-service', 'unreachable', 'refused'));
    const sink = new ScriptedSink(failures);
    const lines: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
    const usage = createUsageBuffer({ sink, logger, flushIntervalMs: 60_000, retryBaseMs: 5 });
    for (let i = 0; i < 3; i++) usage.record(ORG_A, '/v1/api/keywords');
    await assert.rejects(usage.close(150), /usage events lost/); // a non-zero exit
    assert.ok(sink.calls.length >= 2, `${sink.calls.length} attempts`);
    assert.equal(sink.counted.size, 0);
    assert.match(lines.join(''), /"lost":3/);
    const callsAtClose = sink.calls.length;
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(sink.calls.length, callsAtClose, 'no retry after close');
  });

  describe('spool', () => {
    let dir: Awaited<ReturnType<typeof tempDir>>;
    beforeEach(async () => {
      dir = await tempDir('usage-spool-');
    });
    afterEach(() => dir.remove());

    it('spools what is undelivered at the deadline, and the next buffer on that folder delivers it exactly once', async () => {
      const down = new ScriptedSink(
        Array.from({ length: 1000 }, () => new UpstreamError('key-service', 'unreachable', 'refused')),
      );
      const first = createUsageBuffer({
        sink: down,
        logger: silent,
        flushIntervalMs: 60_000,
        retryBaseMs: 5,
        spool: createUsageSpool(dir.path),
      });
      for (let i = 0; i < 5; i++) first.record(i < 3 ? ORG_A : ORG_B, '/v1/api/keywords');
      await first.close(1100);
      const sentBefore = new Set(down.calls.flat().map((event) => event.id));
      assert.equal(sentBefore.size, 5);

      const up = new ScriptedSink();
      const admission = createLocalAdmission({ requests: 100, windowSeconds: 60 });
      const { ledger } = admission;
      const next = createUsageBuffer({
        sink: up,
        logger: silent,
        retryBaseMs: 5,
        ledger,
        spool: createUsageSpool(dir.path),
      });
      assert.equal(await next.deliverSpooled(), 5);
      // Until acknowledged, they count toward the ceiling here: of a headroom of 4, one call is left.
      const usage = { used: 0, ceiling: 4, periodEnd: new Date(Date.now() + 86_400_000), acknowledgedBefore: 0 };
      assert.equal((await admission.take('org_a', Date.now(), usage)).ceilingReached, false);
      assert.equal((await admission.take('org_a', Date.now(), usage)).ceilingReached, true);
      await until(() => next.pendingTotal() === 0);
      assert.deepEqual(new Set(up.counted.keys()), sentBefore, 'the same events, by id');
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(await readdir(dir.path), [], 'the delivered spool file is gone');

      const again = createUsageBuffer({ sink: up, logger: silent, spool: createUsageSpool(dir.path) });
      assert.equal(await again.deliverSpooled(), 0, 'nothing is delivered twice');
      await Promise.all([next.close(100), again.close(100)]);
    });

    it('says exactly how many are lost, and fails, when the spool folder cannot be written', async () => {
      const down = new ScriptedSink(
        Array.from({ length: 1000 }, () => new UpstreamError('key-service', 'unreachable', 'refused')),
      );
      const lines: string[] = [];
      const logger = pino({ level: 'error' }, { write: (line: string) => lines.push(line) });
      const blocked = join(dir.path, 'not-a-folder');
      await writeFile(blocked, 'a file where the folder should be');
      const usage = createUsageBuffer({
        sink: down,
        logger,
        flushIntervalMs: 60_000,
        retryBaseMs: 5,
        spool: createUsageSpool(blocked),
      });
      for (let i = 0; i < 4; i++) usage.record(ORG_A, '/v1/api/keywords');
      await assert.rejects(usage.close(1050), /usage events lost/);
      const lost = lines.filter((line) => line.includes('"lost"'));
      assert.equal(lost.length, 1);
      assert.match(lost[0] ?? '', /"lost":4/);
    });
  });
});

async function until(condition: () => boolean, withinMs = 2000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
