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

/** The requests of one organization waiting, in one event-loop turn, for the same window. */
interface Batch {
  readonly organizationId: string;
  readonly window: FixedWindow;
  readonly waiting: Array<{ resolve(decision: LimitDecision): void; reject(err: unknown): void }>;
}

/**
 * The request limit shared by every instance on one Redis: a fixed window per
 * organization, aligned to the clock, on one atomic counter (windowScript).
 *
 * The requests of one organization that arrive in the same event-loop turn ask Redis
 * in one script call for as many requests as they are; auto-pipelining packs the calls
 * of one turn into one write. Each request is granted or refused in that call: no
 * instance holds units another could serve, so together the instances admit exactly
 * the allowance.
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
  const batches = new Map<string, Batch>();
  let flushScheduled = false;
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

  const send = async (key: string, batch: Batch): Promise<void> => {
    const { organizationId, window, waiting } = batch;
    let granted: number;
    let count: number;
    try {
      const known = admitted.get(organizationId, window.index);
      [granted, count] = await redis.takeFromWindow(key, instanceId, known, requests, lifetimeMs, waiting.length);
    } catch (err: unknown) {
      // Debug only: the 503 is logged with this cause, and the connection logs the outage once.
      logger.debug({ err, organizationId }, 'request limit could not be checked: denying with 503');
      const unavailable = new LimiterUnavailable(policy, { cause: err });
      for (const request of waiting) request.reject(unavailable);
      return;
    }
    // Requests whose window ended while they waited stay out of the next window's count.
    if (granted > 0 && admitted.latest().windowIndex <= window.index) admitted.add(organizationId, window.index, granted);
    const countBefore = count - granted;
    waiting.forEach((request, i) => {
      const allowed = i < granted;
      request.resolve({
        allowed,
        limit: requests,
        remaining: allowed ? requests - (countBefore + i + 1) : 0,
        resetSeconds: window.resetSeconds,
        windowSeconds,
      });
    });
  };

  const flush = (): void => {
    flushScheduled = false;
    for (const [key, batch] of batches) void send(key, batch);
    batches.clear();
  };

  return {
    take(organizationId, nowMs) {
      if (closed || !redisReady(redis)) throw new LimiterUnavailable(policy, { cause: new Error('redis not ready') });
      const window = fixedWindowAt(nowMs, windowMs);
      const key = windowKey(organizationId, window.index);
      let batch = batches.get(key);
      if (batch === undefined) {
        batch = { organizationId, window, waiting: [] };
        batches.set(key, batch);
      }
      if (!flushScheduled) {
        flushScheduled = true;
        // After this turn's I/O callbacks: the requests parsed in this turn ask together.
        setImmediate(flush);
      }
      const { waiting } = batch;
      return new Promise<LimitDecision>((resolve, reject) => waiting.push({ resolve, reject }));
    },
    available: () => !closed && redisReady(redis),
    async close() {
      closed = true;
      redis.off('ready', addBack);
      admitted.clear();
    },
  };
}
