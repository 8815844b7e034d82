import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { UpstreamError } from '../errors.js';
import { leaseSize, renewsAhead } from '../limits/leases.js';
import { UNAVAILABLE_RETRY_AFTER_SECONDS } from '../limits/requestLimiter.js';
import { type RedisConnection, redisReady, withinCommandTimeout } from '../redis/connectRedis.js';
import { sleep } from '../upstream/deadline.js';
import { ceilingKey, defineCeilingScripts, markerKey } from './ceilingScripts.js';
import { appendRun, type EpochRun, removeOne, takeFront } from './epochRuns.js';
import type { Admission, ClaimOutcome, SnapshotMarks, UsageLedger, UsageSnapshot } from './usageLedger.js';

export interface SharedUsageLedgerOptions {
  /** The shared connection; the ledger never closes it. */
  readonly redis: RedisConnection;
  readonly logger: Logger;
  /** Units held here and unused for this long go back to the shared count. Default 1 s. */
  readonly idleMs?: number;
  readonly now?: () => number;
}

/** A count no snapshot has closed on yet lives this long (ms) unless one does. */
const UNSEEDED_LIFETIME_MS = 10 * 60_000;
/** A count outlives its period by this much, so batches delivered late and clocks a little behind still find it. */
const PERIOD_END_MARGIN_MS = 10 * 60_000;
/** How often `settled` looks at the calls in doubt. */
const SETTLED_POLL_MS = 20;
/** Changes that could not reach Redis are sent again after this. */
const STEP_RETRY_MS = 250;
/**
 * How long Redis remembers a change or claim: far longer than a resend takes (every
 * STEP_RETRY_MS while Redis answers), short enough that a busy organization's markers stay few.
 */
const MARKER_LIFETIME_MS = 2 * 60_000;

/** A request waiting for its claim's answer. */
interface Waiter {
  resolve(outcome: ClaimOutcome): void;
  reject(err: unknown): void;
}

/** One organization's period as this instance knows it. */
interface OrganizationCount {
  readonly organizationId: string;
  readonly periodEnd: number;
  /** The incarnation of the shared count the units held here were taken from. */
  epoch: string;
  /** Units taken from Redis beyond the requests that asked: admitted here without a call. */
  held: number;
  lastLease: number;
  /** What Redis said was left (beyond the units held) after the last call; null before the first. */
  room: number | null;
  nearCeilingMargin: number;
  waiting: Waiter[];
  calling: boolean;
  lastClaimMs: number;
}

/** Changes to one organization's shared count, for calls admitted under one epoch, not yet sent. */
interface PendingStep {
  readonly organizationId: string;
  readonly epoch: string;
  admitted: number;
  acknowledged: number;
  inDoubt: number;
}

/** Per organization, the epochs of its calls admitted here and not yet sent, and of those sent and not yet answered. */
interface CallEpochs {
  readonly admitted: EpochRun[];
  readonly sent: EpochRun[];
}

/**
 * The usage ledger shared by every instance on one Redis (ceilingScripts.ts): one count
 * per organization and period, seeded from and reconciled with the key service's `used`.
 * Each verification is a snapshot: `acknowledged` is read before the verify is sent
 * (surely included) and `acknowledged + inDoubt` when it answers (maybe included); the
 * newest snapshot by send order sets `others`, and a call is admitted iff
 * `others + admitted + 1 ≤ ceiling`, checked and counted in one script.
 *
 * Units are taken in leases like the request limiter's (leases.ts), so most calls need no
 * Redis call: a share of what is left, none within the near-ceiling margin (there each
 * call is exact). Unused units go back when they idle, at the period's end and on close.
 * Organizations without a ceiling never touch Redis.
 *
 * Redis unreachable or slow (its command timeout): a call that needs Redis is refused with
 * 503 and Retry-After, as the request limit is; units already held are still served (Redis
 * counts them). The usage buffer's hooks are queued and sent again until Redis takes them.
 */
export function createSharedUsageLedger(options: SharedUsageLedgerOptions): UsageLedger {
  const { redis, logger } = options;
  const now = options.now ?? Date.now;
  const idleMs = options.idleMs ?? 1000;
  defineCeilingScripts(redis);
  const counts = new Map<string, OrganizationCount>();
  /** Organizations seen without a ceiling: their batches are not told to Redis. */
  const withoutCeiling = new Set<string>();
  /** By organization and epoch. */
  const pending = new Map<string, PendingStep>();
  /** Changes given an id, sent and not yet confirmed (or not sent: Redis was down). */
  const unsent: Array<{ id: string; entry: PendingStep }> = [];
  /** Claims whose answer was lost: what they were granted goes back. */
  const cancels: Array<{ organizationId: string; id: string }> = [];
  const epochsOf = new Map<string, CallEpochs>();
  const callEpochs = (organizationId: string): CallEpochs => {
    let epochs = epochsOf.get(organizationId);
    if (!epochs) {
      epochs = { admitted: [], sent: [] };
      epochsOf.set(organizationId, epochs);
    }
    return epochs;
  };
  let stepTimer: NodeJS.Timeout | null = null;
  let stepScheduled = false;
  let closed = false;

  const unavailable = (cause: unknown): UpstreamError => {
    const detail = cause instanceof Error ? cause.message : String(cause);
    return new UpstreamError(
      'key-service',
      'unreachable',
      `usage ceiling: redis ${detail}`,
      UNAVAILABLE_RETRY_AFTER_SECONDS,
    );
  };

  // ---- changes to the shared count (releases, returned units, the usage buffer's hooks)

  const step = (
    organizationId: string,
    epoch: string,
    change: Partial<Pick<PendingStep, 'admitted' | 'acknowledged' | 'inDoubt'>>,
  ): void => {
    const key = `${organizationId}\n${epoch}`;
    let entry = pending.get(key);
    if (!entry) {
      entry = { organizationId, epoch, admitted: 0, acknowledged: 0, inDoubt: 0 };
      pending.set(key, entry);
    }
    entry.admitted += change.admitted ?? 0;
    entry.acknowledged += change.acknowledged ?? 0;
    entry.inDoubt += change.inDoubt ?? 0;
    if (!stepScheduled) {
      stepScheduled = true;
      // The hooks of one event-loop turn go out together.
      setImmediate(sendSteps);
    }
  };

  const sendSteps = (): Promise<unknown> => {
    stepScheduled = false;
    for (const entry of pending.values()) unsent.push({ id: randomUUID(), entry });
    pending.clear();
    if (unsent.length === 0 && cancels.length === 0) return Promise.resolve();
    if (!redisReady(redis)) {
      retrySteps();
      return Promise.resolve();
    }
    const sending = unsent.splice(0);
    const cancelling = cancels.splice(0).map((cancel) =>
      redis
        .cancelCeilingClaim(
          ceilingKey(cancel.organizationId),
          markerKey(cancel.organizationId, cancel.id),
          MARKER_LIFETIME_MS,
        )
        .catch(() => {
          cancels.push(cancel);
          retrySteps();
        }),
    );
    return Promise.all([
      ...cancelling,
      ...sending.map((change) => {
        const { id, entry } = change;
        const { organizationId } = entry;
        return redis
          .stepCeiling(
            ceilingKey(organizationId),
            markerKey(organizationId, id),
            entry.epoch,
            entry.admitted,
            entry.acknowledged,
            entry.inDoubt,
            MARKER_LIFETIME_MS,
          )
          .catch((err: unknown) => {
            // Perhaps applied and only the answer lost: sent again as it is, under the same marker.
            logger.debug({ err, organizationId }, 'usage count change not confirmed by redis: sent again');
            unsent.push(change);
            retrySteps();
          });
      }),
    ]);
  };

  const retrySteps = (): void => {
    if (stepTimer || closed) return;
    stepTimer = setTimeout(() => {
      stepTimer = null;
      void sendSteps();
    }, STEP_RETRY_MS);
    stepTimer.unref();
  };

  const admissionFrom = (organizationId: string, epoch: string): Admission => {
    const epochs = callEpochs(organizationId);
    appendRun(epochs.admitted, epoch, 1);
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        removeOne(epochs.admitted, epoch);
        step(organizationId, epoch, { admitted: -1 });
      },
    };
  };

  const giveBack = (count: OrganizationCount): void => {
    if (count.held > 0) step(count.organizationId, count.epoch, { admitted: -count.held });
    count.held = 0;
    count.lastLease = 0;
  };

  // ---- claims

  const countFor = (organizationId: string, periodEnd: number, nearCeilingMargin: number): OrganizationCount => {
    let count = counts.get(organizationId);
    if (count && count.periodEnd !== periodEnd) {
      if (count.calling) return count; // answered with its own period; the next claim starts the new one
      giveBack(count);
      count = undefined;
    }
    if (!count) {
      count = {
        organizationId,
        periodEnd,
        epoch: '',
        held: 0,
        lastLease: 0,
        room: null,
        nearCeilingMargin,
        waiting: [],
        calling: false,
        lastClaimMs: now(),
      };
      counts.set(organizationId, count);
    }
    count.nearCeilingMargin = nearCeilingMargin;
    return count;
  };

  const leaseFor = (count: OrganizationCount): number =>
    count.room === null || count.room <= count.nearCeilingMargin ? 0 : leaseSize(count.room);

  const call = async (count: OrganizationCount): Promise<void> => {
    const { organizationId, periodEnd } = count;
    const waiting = count.waiting;
    count.waiting = [];
    count.calling = true;
    const lease = leaseFor(count);
    let answer: [granted: number, room: number, roomLow: number, epoch: string];
    const claimId = randomUUID();
    try {
      answer = await withinCommandTimeout(() =>
        redis.claimCeiling(
          ceilingKey(organizationId),
          markerKey(organizationId, claimId),
          String(periodEnd),
          waiting.length + lease,
          MARKER_LIFETIME_MS,
        ),
      );
    } catch (err: unknown) {
      logger.debug({ err, organizationId }, 'usage ceiling could not be checked: refusing with 503');
      // It may have run and only its answer be lost (a timeout): what it took goes back.
      cancels.push({ organizationId, id: claimId });
      retrySteps();
      count.calling = false;
      // Those that queued behind the failed call are refused too: another call would wait as long.
      const refusal = unavailable(err);
      for (const waiter of [...waiting, ...count.waiting.splice(0)]) waiter.reject(refusal);
      return;
    }
    const [granted, room, roomLow, epoch] = answer;
    count.calling = false;
    if (granted === -2) {
      // Cancelled before it ran: impossible on one connection, which keeps the order; asked again.
      count.waiting.unshift(...waiting);
    } else if (granted < 0) {
      // No snapshot of this period in Redis (new period, expired or lost key): verify, then claim again.
      count.room = null;
      for (const waiter of waiting) waiter.resolve({ refusal: 'unseeded' });
    } else {
      if (epoch !== count.epoch) {
        // Units held from an earlier incarnation are worth nothing in this one.
        count.held = 0;
        count.epoch = epoch;
      }
      waiting.forEach((waiter, i) => {
        if (i < granted) waiter.resolve({ admission: admissionFrom(organizationId, epoch) });
        else waiter.resolve({ refusal: roomLow > 0 ? 'inDoubt' : 'refused' });
      });
      count.lastLease = Math.max(0, granted - waiting.length);
      count.held += count.lastLease;
      count.room = room;
    }
    if (count.waiting.length > 0) void call(count);
  };

  const claimShared = (
    organizationId: string,
    usage: UsageSnapshot,
    margin: number,
  ): ClaimOutcome | Promise<ClaimOutcome> => {
    const count = countFor(organizationId, usage.periodEnd.getTime(), margin);
    count.lastClaimMs = now();
    if (count.held > 0 && count.periodEnd === usage.periodEnd.getTime()) {
      count.held -= 1;
      if (!count.calling && renewsAhead(count.lastLease, count.held)) {
        void call(count);
      }
      return { admission: admissionFrom(organizationId, count.epoch) };
    }
    if (closed || !redisReady(redis)) throw unavailable(closed ? 'closed' : 'not ready');
    return new Promise<ClaimOutcome>((resolve, reject) => {
      count.waiting.push({ resolve, reject });
      // One call out per organization: those arriving meanwhile ask together in the next.
      if (!count.calling) void call(count);
    });
  };

  // Units that idle go back, so an instance with no more callers does not keep others from the room.
  const idleTimer = setInterval(() => {
    const nowMs = now();
    for (const count of counts.values()) {
      if (count.calling || nowMs - count.lastClaimMs < idleMs) continue;
      giveBack(count);
      if (nowMs - count.lastClaimMs > 60 * idleMs && count.waiting.length === 0) counts.delete(count.organizationId);
    }
    for (const [organizationId, epochs] of epochsOf)
      if (epochs.admitted.length === 0 && epochs.sent.length === 0) epochsOf.delete(organizationId);
  }, idleMs);
  idleTimer.unref();

  const noAdmission: Admission = { release() {} };
  const hasCeiling = (organizationId: string): boolean => !withoutCeiling.has(organizationId);

  return {
    claim({ organizationId, usage, nearCeilingMargin }) {
      if (usage.ceiling === null) {
        withoutCeiling.add(organizationId);
        return { admission: noAdmission };
      }
      withoutCeiling.delete(organizationId);
      return claimShared(organizationId, usage, nearCeilingMargin);
    },

    headroom(organizationId, usage) {
      if (usage.ceiling === null) return Number.POSITIVE_INFINITY;
      const count = counts.get(organizationId);
      if (count && count.room !== null && count.periodEnd === usage.periodEnd.getTime()) return count.room + count.held;
      return usage.ceiling - usage.used;
    },

    async openSnapshot(organizationId) {
      if (organizationId === undefined || !hasCeiling(organizationId)) return unanchored;
      if (closed || !redisReady(redis)) throw unavailable(closed ? 'closed' : 'not ready');
      let opened: [acknowledged: number, seq: number, epoch: string];
      try {
        opened = await withinCommandTimeout(() =>
          redis.openCeilingSnapshot(ceilingKey(organizationId), randomUUID(), UNSEEDED_LIFETIME_MS),
        );
      } catch (err: unknown) {
        throw unavailable(err);
      }
      const [surelyIncluded, seq, epoch] = opened;
      return {
        async close(answeredFor, usage) {
          if (answeredFor !== organizationId || usage.ceiling === null) return { surelyIncluded: 0, maybeIncluded: 0 };
          const periodEnd = usage.periodEnd.getTime();
          let closedWith: [written: number, maybeIncluded: number, room: number];
          try {
            const { ceiling, used } = usage;
            closedWith = await withinCommandTimeout(() =>
              redis.closeCeilingSnapshot(
                ceilingKey(organizationId),
                epoch,
                seq,
                surelyIncluded,
                periodEnd,
                used,
                ceiling,
                randomUUID(),
                periodEnd + PERIOD_END_MARGIN_MS,
              ),
            );
          } catch (err: unknown) {
            throw unavailable(err);
          }
          const [written, maybeIncluded, room] = closedWith;
          if (written === 1) overcommitted(organizationId, periodEnd, room);
          return { surelyIncluded, maybeIncluded: written === 1 ? maybeIncluded : surelyIncluded };
        },
        discard() {},
      };
    },

    adopted() {
      // An earlier instance's calls were counted in the shared `admitted` when it admitted them.
    },

    sending(organizationId, calls) {
      if (!hasCeiling(organizationId)) return;
      const epochs = callEpochs(organizationId);
      for (const run of takeFront(epochs.admitted, calls)) {
        appendRun(epochs.sent, run.epoch, run.calls);
        step(organizationId, run.epoch, { inDoubt: run.calls });
      }
    },

    acknowledged(organizationId, calls) {
      if (!hasCeiling(organizationId)) return;
      for (const run of takeFront(callEpochs(organizationId).sent, calls))
        step(organizationId, run.epoch, { acknowledged: run.calls, inDoubt: -run.calls });
    },

    dropped(organizationId, calls) {
      if (!hasCeiling(organizationId)) return;
      for (const run of takeFront(callEpochs(organizationId).sent, calls))
        step(organizationId, run.epoch, { admitted: -run.calls, inDoubt: -run.calls });
    },

    isNearCeiling(organizationId) {
      const count = counts.get(organizationId);
      return count !== undefined && count.room !== null && count.room + count.held <= count.nearCeilingMargin;
    },

    async settled(organizationId, timeoutMs) {
      const until = now() + timeoutMs;
      while (now() < until) {
        const inDoubt = await withinCommandTimeout(() => redis.hget(ceilingKey(organizationId), 'inDoubt')).catch(
          () => null,
        );
        if (inDoubt === null || Number(inDoubt) <= 0) return;
        await sleep(SETTLED_POLL_MS);
      }
    },

    async close() {
      closed = true;
      clearInterval(idleTimer);
      for (const count of counts.values()) giveBack(count);
      if (stepTimer) {
        clearTimeout(stepTimer);
        stepTimer = null;
      }
      await sendSteps();
      counts.clear();
    },
  };

  /** A newer snapshot leaves less room than the units held here: what does not fit goes back. */
  function overcommitted(organizationId: string, periodEnd: number, room: number): void {
    const count = counts.get(organizationId);
    if (!count || count.periodEnd !== periodEnd) return;
    count.room = room;
    if (room >= 0 || count.held === 0) return;
    const back = Math.min(count.held, -room);
    count.held -= back;
    step(organizationId, count.epoch, { admitted: -back });
  }
}

/** A snapshot opened without knowing the organization: it cannot mark the shared count. */
const unanchored = {
  close: (): SnapshotMarks => ({ surelyIncluded: 0, maybeIncluded: 0 }),
  discard() {},
};
