import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { redisReady, type RedisConnection } from '../redis/connectRedis.js';
import { fixedWindowAt, type FixedWindow } from './fixedWindow.js';
import { LimiterUnavailable, type LimitDecision, type ManagedRequestLimiter } from './requestLimiter.js';
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

/** One organization's window in this instance: the requests not yet asked for, and whether a call is out. */
interface KeyQueue {
  readonly organizationId: string;
  readonly windowIndex: number;
  waiting: Waiter[];
  calling: boolean;
}

/**
 * The request limit shared by every instance on one Redis: a fixed window per
 * organization, aligned to the clock, on one atomic counter (windowScript).
 *
 * Per organization and window, at most one script call is out at a time: the
 * requests that arrive while it is out ask together in the next call, for as many
 * requests as they are (and those of one event-loop turn ask together from the start).
 * A lone request is sent at once; under load each call carries many requests, which is
 * what keeps the cost per request near the local limiter's. Each request is granted or
 * refused in its call: no instance holds units another could serve, so together the
 * instances admit exactly the allowance.
 *
 * Redis not ready, or not answering within the connection's command timeout: the
 * request is denied (LimiterUnavailable), never let through unlimited.
 *
 * Redis restarted empty, or a failover lost the last writes: each instance passes what
 * it admitted in the window with every call, and after every reconnect passes it for
 * every organization at once, so the script adds back what Redis forgot.
 */
export function createRedisRequestLimiter(options: RedisRequestLimiterOptions): ManagedRequestLimiter {
  const { requests, windowSeconds, redis, logger } = options;
  const windowMs = windowSeconds * 1000;
  const lifetimeMs = windowMs + CLOCK_SKEW_MARGIN_MS;
  const policy = { limit: requests, windowSeconds };
  const instanceId = randomUUID();
  const admitted = createWindowCounts();
  const queues = new Map<string, KeyQueue>();
  const toSend = new Set<string>();
  let sendScheduled = false;
  let closed = false;
  defineWindowScript(redis);

  const addBack = (): void => {
    const { windowIndex, counts } = admitted.latest();
    for (const [organizationId, count] of counts) {
      redis.takeFromWindow(windowKey(organizationId, windowIndex), instanceId, count, requests, lifetimeMs, 0).catch(
        (err: unknown) => {
          // The next request of this organization passes the same count again.
          logger.debug({ err, organizationId }, 'request counts could not be added back to redis yet');
        },
      );
    }
  };
  redis.on('ready', addBack);

  const call = async (key: string, queue: KeyQueue): Promise<void> => {
    const { organizationId, windowIndex } = queue;
    const waiting = queue.waiting;
    queue.waiting = [];
    queue.calling = true;
    let granted: number;
    let count: number;
    try {
      const known = admitted.get(organizationId, windowIndex);
      [granted, count] = await redis.takeFromWindow(key, instanceId, known, requests, lifetimeMs, waiting.length);
    } catch (err: unknown) {
      // Debug only: the 503 is logged with this cause, and the connection logs the outage once.
      logger.debug({ err, organizationId }, 'request limit could not be checked: denying with 503');
      // Those that queued behind the failed call are denied too: another call would wait as long.
      queues.delete(key);
      const unavailable = new LimiterUnavailable(policy, { cause: err });
      for (const request of [...waiting, ...queue.waiting]) request.reject(unavailable);
      return;
    }
    // Requests whose window ended while they waited stay out of the next window's count.
    if (granted > 0 && admitted.latest().windowIndex <= windowIndex) admitted.add(organizationId, windowIndex, granted);
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
    queue.calling = false;
    if (queue.waiting.length > 0) void call(key, queue);
    else queues.delete(key);
  };

  const sendQueued = (): void => {
    sendScheduled = false;
    for (const key of toSend) {
      const queue = queues.get(key);
      if (queue && !queue.calling && queue.waiting.length > 0) void call(key, queue);
    }
    toSend.clear();
  };

  return {
    take(organizationId, nowMs) {
      if (closed || !redisReady(redis)) throw new LimiterUnavailable(policy, { cause: new Error('redis not ready') });
      const window = fixedWindowAt(nowMs, windowMs);
      const key = windowKey(organizationId, window.index);
      let queue = queues.get(key);
      if (queue === undefined) {
        queue = { organizationId, windowIndex: window.index, waiting: [], calling: false };
        queues.set(key, queue);
      }
      if (!queue.calling) {
        toSend.add(key);
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
      admitted.clear();
    },
  };
}
