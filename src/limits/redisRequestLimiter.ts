import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { type RedisConnection, redisReady, withinCommandTimeout } from '../redis/connectRedis.js';
import { type FixedWindow, fixedWindowAt } from './fixedWindow.js';
import { leaseSize, renewsAhead } from './leases.js';
import { type LimitDecision, LimiterUnavailable, type ManagedRequestLimiter } from './requestLimiter.js';
import { createWindowCounts } from './windowCounts.js';
import { defineWindowScript, windowKey } from './windowScript.js';

export interface RedisRequestLimiterOptions {
  /** RATE_LIMIT_REQUESTS: allowance per organization per window. */
  readonly requests: number;
  /** RATE_LIMIT_WINDOW_SECONDS. */
  readonly windowSeconds: number;
  /** The shared connection; the limiter never closes it. */
  readonly redis: RedisConnection;
  readonly logger: Logger;
}

/**
 * A window's key outlives its window by this much, so an instance whose clock runs a
 * little behind still finds the window's shared count.
 */
const CLOCK_SKEW_MARGIN_MS = 10_000;

/** One request waiting for its decision, with the window it arrived in. */
interface Waiter {
  readonly window: FixedWindow;
  resolve(decision: LimitDecision): void;
  reject(err: unknown): void;
}

/** One organization's window in this instance. */
interface KeyQueue {
  readonly organizationId: string;
  readonly windowIndex: number;
  /** Requests not yet asked for. */
  waiting: Waiter[];
  /** Whether a script call for this window is out. */
  calling: boolean;
  /** Units taken from Redis beyond the requests that asked: served here without a call. */
  held: number;
  /** What Redis said was left after the last call; null before the first. */
  left: number | null;
  /** Units the last call took beyond the requests that asked. */
  lastLease: number;
}

/**
 * The request limit shared by every instance on one Redis: a fixed window per
 * organization, aligned to the clock, on one atomic counter (windowScript).
 *
 * Per organization and window, at most one script call is out at a time: the
 * requests that arrive while it is out ask together in the next call, for as many
 * requests as they are (and those of one event-loop turn ask together from the start),
 * plus a small lease (leases.ts) the next requests are served from at once.
 * Together the instances never admit more than the allowance; under-admission is
 * bounded by the leases left unused at the window's end.
 *
 * Redis not ready, or not answering within the connection's command timeout: the
 * request is denied (LimiterUnavailable), never let through unlimited.
 *
 * Redis restarted empty, or a failover lost the last writes: each instance passes what
 * it took in the window with every call, and after every reconnect passes it for
 * every organization at once, so the script adds back what Redis forgot.
 */
export function createRedisRequestLimiter(options: RedisRequestLimiterOptions): ManagedRequestLimiter {
  const { requests, windowSeconds, redis, logger } = options;
  const windowMs = windowSeconds * 1000;
  const lifetimeMs = windowMs + CLOCK_SKEW_MARGIN_MS;
  const policy = { limit: requests, windowSeconds };
  const instanceId = randomUUID();
  // What this instance took from Redis per organization in the latest window, held units included.
  const taken = createWindowCounts();
  // Per organization, its queue for the latest window it was asked about.
  const queues = new Map<string, KeyQueue>();
  const toSend = new Set<KeyQueue>();
  let sendScheduled = false;
  let closed = false;
  defineWindowScript(redis);

  const addBack = (): void => {
    const { windowIndex, counts } = taken.latest();
    for (const [organizationId, count] of counts) {
      redis
        .takeFromWindow(windowKey(organizationId, windowIndex), instanceId, count, requests, lifetimeMs, 0)
        .catch((err: unknown) => {
          // The next request of this organization passes the same count again.
          logger.debug({ err, organizationId }, 'request counts could not be added back to redis yet');
        });
    }
  };
  redis.on('ready', addBack);

  let queuesWindow = -Infinity;
  const queueFor = (organizationId: string, windowIndex: number): KeyQueue => {
    if (windowIndex > queuesWindow) {
      // Units held for a window that is over are worth nothing: drop them with their queues
      // (a call still out keeps its own queue until it answers).
      for (const [other, queue] of queues) if (queue.windowIndex < windowIndex) queues.delete(other);
      queuesWindow = windowIndex;
    }
    let queue = queues.get(organizationId);
    // A moment from an earlier window (the clock stepped back) is served by the latest window's queue.
    if (queue === undefined || queue.windowIndex < windowIndex) {
      queue = { organizationId, windowIndex, waiting: [], calling: false, held: 0, left: null, lastLease: 0 };
      queues.set(organizationId, queue);
    }
    return queue;
  };

  const call = async (queue: KeyQueue): Promise<void> => {
    const { organizationId, windowIndex } = queue;
    const key = windowKey(organizationId, windowIndex);
    const waiting = queue.waiting;
    queue.waiting = [];
    queue.calling = true;
    const lease = queue.left === null ? 0 : leaseSize(queue.left);
    let granted: number;
    let count: number;
    try {
      // Held units included: Redis must count those too after a restart.
      const known = taken.get(organizationId, windowIndex);
      const asked = waiting.length + lease;
      [granted, count] = await withinCommandTimeout(() =>
        redis.takeFromWindow(key, instanceId, known, requests, lifetimeMs, asked),
      );
    } catch (err: unknown) {
      // Debug only: the 503 is logged with this cause, and the connection logs the outage once.
      logger.debug({ err, organizationId }, 'request limit could not be checked: denying with 503');
      // Those that queued behind the failed call are denied too: another call would wait as long.
      if (queues.get(organizationId) === queue) queues.delete(organizationId);
      const unavailable = new LimiterUnavailable(policy, { cause: err });
      for (const request of [...waiting, ...queue.waiting]) request.reject(unavailable);
      return;
    }
    // Requests whose window ended while they waited stay out of the next window's count.
    if (granted > 0 && taken.latest().windowIndex <= windowIndex) taken.add(organizationId, windowIndex, granted);
    const countBefore = count - granted;
    waiting.forEach((request, i) => {
      const allowed = i < granted;
      request.resolve({
        allowed,
        limit: requests,
        remaining: allowed ? requests - (countBefore + i + 1) : 0,
        resetSeconds: request.window.resetSeconds,
        windowSeconds,
      });
    });
    queue.lastLease = Math.max(0, granted - waiting.length);
    queue.held += queue.lastLease;
    queue.left = requests - count;
    queue.calling = false;
    if (queue.waiting.length > 0) void call(queue);
  };

  const sendQueued = (): void => {
    sendScheduled = false;
    for (const queue of toSend) if (!queue.calling && queue.waiting.length > 0) void call(queue);
    toSend.clear();
  };

  return {
    take(organizationId, nowMs) {
      if (closed || !redisReady(redis)) throw new LimiterUnavailable(policy, { cause: new Error('redis not ready') });
      const window = fixedWindowAt(nowMs, windowMs);
      const queue = queueFor(organizationId, window.index);
      if (queue.held > 0) {
        queue.held -= 1;
        if (!queue.calling && renewsAhead(queue.lastLease, queue.held)) void call(queue);
        const remaining = (queue.left ?? 0) + queue.held;
        return { allowed: true, limit: requests, remaining, resetSeconds: window.resetSeconds, windowSeconds };
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
      return new Promise<LimitDecision>((resolve, reject) => waiting.push({ window, resolve, reject }));
    },
    available: () => !closed && redisReady(redis),
    async close() {
      closed = true;
      redis.off('ready', addBack);
      taken.clear();
    },
  };
}
