import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type RedisConnection, redisReady, withinCommandTimeout } from '../redis/connectRedis.js';
import { createCallCounts, startPeriod } from '../usage/usageLedger.js';
import {
  type Admission,
  type AdmissionOptions,
  type CallerUsage,
  type Grant,
  granted,
  LimiterUnavailable,
  NEAR_CEILING_MARGIN,
  refused,
  type TrackedState,
} from './admission.js';
import { ceilingKey, defineAdmissionScripts, sendingKey, windowKey } from './admissionScript.js';
import { type FixedWindow, fixedWindowAt } from './fixedWindow.js';
import { createLastSeen } from './idleOrganizations.js';
import { leaseSize, renewsAhead } from './leases.js';
import { createWindowCounts } from './windowCounts.js';

export interface RedisAdmissionOptions extends AdmissionOptions {
  /** The shared connection; admission never closes it. */
  readonly redis: RedisConnection;
  readonly logger: Logger;
}

/** Units leased here and unused for this long go back, the limit's and the ceiling's. */
const IDLE_MS = 1000;

/** A window's key outlives its window by this much, so an instance whose clock runs a little behind still finds it. */
const CLOCK_SKEW_MARGIN_MS = 10_000;
/** How long an instance's ceiling field counts without being written again: a killed instance's places free after this. */
const FIELD_LIFETIME_MS = 15_000;
/**
 * A field with nothing in flight or on its way is written again this long after its last write: well before others
 * fold it (its `until` plus a minute), and spread over time as the writes were, not all of an instance's at once.
 */
const SETTLED_RENEW_MS = 30_000;
/** A ceiling key outlives the period by this much: late acknowledgements still find it. */
const PERIOD_END_MARGIN_MS = 10 * 60_000;

interface Waiter {
  readonly window: FixedWindow;
  readonly usage: CallerUsage | undefined;
  resolve(grant: Grant): void;
  reject(err: unknown): void;
}

/** One organization's admission in this instance, for one window. */
interface Queue {
  readonly organizationId: string;
  readonly windowIndex: number;
  /** The verification the units leased here were checked against. */
  usage: CallerUsage | undefined;
  waiting: Waiter[];
  calling: boolean;
  /** Units taken beyond the requests that asked (a limit unit and a ceiling place each), served here at once; they go back unused. */
  leased: number;
  lastLease: number;
  /** What the last call said was left of the allowance and under the ceiling; null before the first. */
  left: number | null;
  room: number | null;
  lastTakeMs: number;
}

const sameVerification = (a: CallerUsage | undefined, b: CallerUsage | undefined): boolean =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.used === b.used &&
    a.ceiling === b.ceiling &&
    a.acknowledgedBefore === b.acknowledgedBefore &&
    a.periodEnd.getTime() === b.periodEnd.getTime());

/** Admission shared by every instance on one Redis (src/usage/README.md): one script call per organization at a time. */
export function createRedisAdmission(options: RedisAdmissionOptions): Admission & TrackedState {
  const { requests, windowSeconds, redis, logger, now = Date.now } = options;
  const windowMs = windowSeconds * 1000;
  const policy = { limit: requests, windowSeconds };
  const instanceId = randomUUID();
  defineAdmissionScripts(redis);
  /** What this instance holds in the latest window, per organization: served, on their way, or leased unused. */
  const taken = createWindowCounts();
  const lastSeen = createLastSeen(now);
  const calls = createCallCounts((organizationId) => writeSoon(organizationId));
  /** The latest verification per organization with a ceiling, for writes no request asks. */
  const ceilings = new Map<string, CallerUsage>();
  const queues = new Map<string, Queue>();
  const toSend = new Set<Queue>();
  const toWrite = new Set<string>();
  /** Script calls out per organization, and those whose counts must be written again once all have answered. */
  const callsOut = new Map<string, number>();
  const writeAfterCalls = new Set<string>();
  let sendScheduled = false;
  let writeScheduled = false;
  let closed = false;

  const unavailable = (cause: unknown) => new LimiterUnavailable(policy, { cause });

  /** When each organization's counts were last sent to Redis (this machine's clock, as `until` is Redis's). */
  const writtenAt = new Map<string, number>();
  const script = (organizationId: string, windowIndex: number, want: number, usage: CallerUsage | undefined) => {
    const counts = calls.countsOf(organizationId);
    const periodEnd = usage?.periodEnd.getTime() ?? 0;
    // Its period over (by this clock, or a verification says so): the counts start the next one.
    if (counts.periodEnd > 0 && (Date.now() >= counts.periodEnd || periodEnd > counts.periodEnd)) {
      startPeriod(counts, periodEnd > Date.now() ? periodEnd : 0);
    } else if (counts.periodEnd === 0 && periodEnd > Date.now()) counts.periodEnd = periodEnd;
    const { waiting, acknowledged, inFlight, sending } = counts;
    writtenAt.set(organizationId, Date.now());
    const lifetimeMs = usage
      ? Math.max(FIELD_LIFETIME_MS, usage.periodEnd.getTime() + PERIOD_END_MARGIN_MS - Date.now())
      : 0;
    return withinCommandTimeout(() =>
      redis.admit(
        windowKey(organizationId, windowIndex),
        ceilingKey(organizationId),
        sendingKey(organizationId),
        instanceId,
        // Of an earlier window this instance no longer knows what it holds: Redis keeps what it has.
        windowIndex === taken.latest().windowIndex ? taken.get(organizationId, windowIndex) : -1,
        requests,
        windowMs + CLOCK_SKEW_MARGIN_MS,
        want,
        usage?.ceiling ?? '',
        usage?.used ?? 0,
        usage?.acknowledgedBefore ?? 0,
        waiting,
        acknowledged,
        inFlight,
        FIELD_LIFETIME_MS,
        lifetimeMs,
        sending,
        usage ? periodEnd : '',
      ),
    );
  };

  /** Writes the organization's counts as they are now, asking for nothing. */
  const writeCounts = (organizationId: string) => {
    const { windowIndex } = taken.latest();
    return script(organizationId, Math.max(0, windowIndex), 0, ceilings.get(organizationId));
  };
  const writeSoon = (organizationId: string): void => {
    if (closed) return;
    toWrite.add(organizationId);
    if (writeScheduled) return;
    writeScheduled = true;
    setImmediate(() => {
      writeScheduled = false;
      for (const id of toWrite) {
        // A call out has not counted its grant here yet: a write now would leave it out.
        if (callsOut.has(id)) writeAfterCalls.add(id);
        else if (redisReady(redis)) {
          // The next call of this organization, a reconnect or the next renewal writes them again.
          writeCounts(id).catch((err: unknown) =>
            logger.debug({ err, organizationId: id }, 'admission counts not written'),
          );
        }
      }
      toWrite.clear();
    });
  };
  const callDone = (organizationId: string): void => {
    const out = (callsOut.get(organizationId) ?? 1) - 1;
    if (out > 0) callsOut.set(organizationId, out);
    else {
      callsOut.delete(organizationId);
      if (writeAfterCalls.delete(organizationId)) writeSoon(organizationId);
    }
  };

  /** The units leased here and unused go back: their places under the ceiling and their units of the limit. */
  const dropLeased = (queue: Queue): void => {
    if (queue.leased === 0) return;
    calls.countsOf(queue.organizationId).inFlight -= queue.leased;
    taken.remove(queue.organizationId, queue.windowIndex, queue.leased);
    writeSoon(queue.organizationId);
    queue.leased = 0;
    queue.lastLease = 0;
  };

  let queuesWindow = Number.NEGATIVE_INFINITY;
  const queueFor = (organizationId: string, windowIndex: number): Queue => {
    if (windowIndex > queuesWindow) {
      // A queue whose call is out gives back what that call leases when its answer comes (`call`).
      for (const [other, queue] of queues) {
        if (queue.windowIndex >= windowIndex) continue;
        dropLeased(queue);
        queues.delete(other);
      }
      queuesWindow = windowIndex;
    }
    let queue = queues.get(organizationId);
    // A moment from an earlier window (the clock stepped back) is served by the latest window's queue.
    if (queue === undefined || queue.windowIndex < windowIndex) {
      queue = {
        organizationId,
        windowIndex,
        usage: undefined,
        waiting: [],
        calling: false,
        leased: 0,
        lastLease: 0,
        left: null,
        room: null,
        lastTakeMs: Date.now(),
      };
      queues.set(organizationId, queue);
    }
    return queue;
  };

  const grantFrom = (queue: Queue, window: FixedWindow, remaining: number): Grant => {
    const { usage, organizationId } = queue;
    return granted(policy, window.resetSeconds, remaining, (kept, limitToo) => {
      // Given back, still good for this window and verification: kept here for the next request.
      if (!kept && limitToo && queues.get(organizationId) === queue && sameVerification(queue.usage, usage)) {
        queue.leased += 1;
        return;
      }
      const counts = calls.countsOf(organizationId);
      counts.inFlight -= 1;
      if (kept) {
        counts.waiting += 1;
        counts.held += 1;
      } else {
        if (limitToo) taken.remove(organizationId, queue.windowIndex);
        writeSoon(organizationId);
      }
    });
  };

  const call = async (queue: Queue): Promise<void> => {
    const { organizationId, windowIndex } = queue;
    const waiting = queue.waiting;
    queue.waiting = [];
    queue.calling = true;
    const usage = waiting[waiting.length - 1]?.usage ?? queue.usage;
    if (!sameVerification(usage, queue.usage)) dropLeased(queue);
    queue.usage = usage;
    const hasCeiling = usage?.ceiling != null;
    const room = hasCeiling ? queue.room : null;
    // A queue of a window already over (its requests waited for the call before) leases nothing.
    const lease =
      queue.left === null || (room !== null && room <= NEAR_CEILING_MARGIN) || queues.get(organizationId) !== queue
        ? 0
        : leaseSize(Math.min(queue.left, room ?? Number.POSITIVE_INFINITY));
    const out = callsOut.get(organizationId) ?? 0;
    // Another call out (the window before) has not counted its grant here yet: written again after both.
    if (out > 0) writeAfterCalls.add(organizationId);
    callsOut.set(organizationId, out + 1);
    let answer: [granted: number, count: number, room: number, doubt: number];
    try {
      answer = await script(organizationId, windowIndex, waiting.length + lease, usage);
    } catch (err: unknown) {
      // What Redis may have granted it stays in this instance's field until its counts are written again.
      writeAfterCalls.add(organizationId);
      callDone(organizationId);
      // Debug only: the 503 is logged with this cause, and the connection logs the outage once.
      logger.debug({ err, organizationId }, 'admission could not be checked: refusing with 503');
      queue.calling = false;
      if (queues.get(organizationId) === queue) queues.delete(organizationId);
      dropLeased(queue);
      // Those that queued behind the failed call are refused too: another call would wait as long.
      const refusal = unavailable(err);
      for (const request of [...waiting, ...queue.waiting.splice(0)]) request.reject(refusal);
      return;
    }
    const [granted, count, roomAfter, doubt] = answer;
    callDone(organizationId);
    // Requests whose window ended while they waited stay out of the next window's count.
    if (granted > 0 && taken.latest().windowIndex <= windowIndex) taken.add(organizationId, windowIndex, granted);
    const counts = calls.countsOf(organizationId);
    // Counted with a ceiling or without: its calls count as soon as one is set.
    counts.inFlight += granted;
    counts.nearCeiling = hasCeiling && roomAfter <= NEAR_CEILING_MARGIN;
    const countBefore = count - granted;
    waiting.forEach((request, i) => {
      if (i < granted) request.resolve(grantFrom(queue, request.window, requests - (countBefore + i + 1)));
      else {
        const decision = { limit: requests, resetSeconds: request.window.resetSeconds, windowSeconds };
        const ceilingReached = hasCeiling && roomAfter <= 0;
        request.resolve(refused(decision, requests - count, ceilingReached, ceilingReached && roomAfter + doubt >= 1));
      }
    });
    queue.lastLease = Math.max(0, granted - waiting.length);
    queue.leased += queue.lastLease;
    queue.left = requests - count;
    queue.room = hasCeiling ? roomAfter : null;
    queue.calling = false;
    // The window turned while the call was out: nothing serves this queue's lease any more.
    if (queues.get(organizationId) !== queue) dropLeased(queue);
    if (queue.waiting.length > 0) void call(queue);
  };

  const sendQueued = (): void => {
    sendScheduled = false;
    for (const queue of toSend) if (!queue.calling && queue.waiting.length > 0) void call(queue);
    toSend.clear();
  };

  // Every organization's counts written again after a reconnect (Redis may have restarted empty): those seen
  // within FORGET_AFTER_MS, or with calls on their way.
  const writeAll = (): void => {
    for (const organizationId of new Set([...calls.all.keys(), ...taken.latest().counts.keys()])) {
      writeSoon(organizationId);
    }
  };
  redis.on('ready', writeAll);

  /** Forgets an idle organization, unless a call of it is out. */
  const forget = (organizationId: string): boolean => {
    const queue = queues.get(organizationId);
    if (callsOut.has(organizationId) || queue?.calling || (queue?.leased ?? 0) > 0) return false;
    queues.delete(organizationId);
    ceilings.delete(organizationId);
    writtenAt.delete(organizationId);
    calls.forget(organizationId);
    return true;
  };

  // Units that idle go back; every counted organization's field is renewed well within its lifetime, and a
  // settled one well before it is folded.
  const tick = setInterval(() => {
    const nowMs = Date.now();
    for (const queue of queues.values()) if (!queue.calling && nowMs - queue.lastTakeMs >= IDLE_MS) dropLeased(queue);
    if (lastSeen.quietFor(windowMs)) taken.clear();
    lastSeen.sweep(calls.all, forget);
    for (const [organizationId, counts] of calls.all) {
      const moving = counts.inFlight !== 0 || counts.sending !== 0;
      if (!moving && !ceilings.has(organizationId)) continue;
      const renewAfterMs = moving ? FIELD_LIFETIME_MS / 3 : SETTLED_RENEW_MS;
      const periodOver = counts.periodEnd > 0 && nowMs >= counts.periodEnd;
      if (periodOver || nowMs - (writtenAt.get(organizationId) ?? 0) >= renewAfterMs) writeSoon(organizationId);
    }
  }, IDLE_MS);
  tick.unref();

  return {
    ledger: {
      ...calls.ledger,
      // Calls taken over from another instance stay counted in its field (folded into `gone` once
      // it is dead) for this period; their acknowledgement here subtracts them. A new period counts them here.
      adopted(organizationId, taken) {
        calls.countsOf(organizationId).held += taken;
      },
      async beforeVerify(organizationId) {
        // The key's organization is not known yet: its answer is asked again, knowing it.
        if (organizationId === undefined) return { acknowledgedFor: () => null, end() {} };
        if (closed || !redisReady(redis)) throw unavailable(new Error('redis not ready'));
        const acknowledged = await withinCommandTimeout(() =>
          redis.acknowledgedCalls(ceilingKey(organizationId)),
        ).catch((err: unknown) => Promise.reject(unavailable(err)));
        return { acknowledgedFor: (answered) => (answered === organizationId ? acknowledged : null), end() {} };
      },
    },
    take(organizationId, nowMs, usage) {
      if (closed || !redisReady(redis)) return Promise.reject(unavailable(new Error('redis not ready')));
      if (usage?.ceiling === null) ceilings.delete(organizationId);
      else if (usage) ceilings.set(organizationId, usage);
      lastSeen.seen(organizationId);
      const window = fixedWindowAt(nowMs, windowMs);
      const queue = queueFor(organizationId, window.index);
      queue.lastTakeMs = Date.now();
      if (queue.leased > 0 && sameVerification(queue.usage, usage)) {
        queue.leased -= 1;
        if (!queue.calling && renewsAhead(queue.lastLease, queue.leased)) void call(queue);
        return Promise.resolve(grantFrom(queue, window, (queue.left ?? 0) + queue.leased));
      }
      if (!queue.calling) {
        toSend.add(queue);
        if (!sendScheduled) {
          sendScheduled = true;
          // After this turn's I/O callbacks: the requests parsed in this turn ask together.
          setImmediate(sendQueued);
        }
      }
      const { waiting } = queue;
      return new Promise<Grant>((resolve, reject) => waiting.push({ window, usage, resolve, reject }));
    },
    available: () => !closed && redisReady(redis),
    trackedOrganizations: lastSeen.size,
    async close() {
      clearInterval(tick);
      redis.off('ready', writeAll);
      // The places leased here go back now rather than when the field's lifetime ends.
      for (const queue of queues.values()) dropLeased(queue);
      await Promise.allSettled([...calls.all.keys()].map(writeCounts));
      closed = true;
      taken.clear();
    },
  };
}
