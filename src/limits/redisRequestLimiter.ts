import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { redisReady, type RedisConnection } from '../redis/connectRedis.js';
import { fixedWindowAt } from './fixedWindow.js';
import { LimiterUnavailable, type ManagedRequestLimiter } from './requestLimiter.js';
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

/**
 * The request limit shared by every instance on one Redis: a fixed window per
 * organization, aligned to the clock, on one atomic counter (windowScript). Every
 * request is one script call; auto-pipelining packs the calls of one event-loop turn
 * into one write. No instance holds units another could serve, so together the
 * instances admit exactly the allowance.
 *
 * Redis not ready, or not answering within the connection's command timeout: the
 * request is denied (LimiterUnavailable), never let through unlimited, and nothing is
 * counted for it here.
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

  return {
    async take(organizationId, nowMs) {
      if (closed || !redisReady(redis)) throw new LimiterUnavailable(policy, { cause: new Error('redis not ready') });
      const window = fixedWindowAt(nowMs, windowMs);
      const key = windowKey(organizationId, window.index);
      let count: number;
      try {
        const known = admitted.get(organizationId, window.index);
        count = await redis.takeFromWindow(key, instanceId, known, requests, lifetimeMs, 1);
      } catch (err: unknown) {
        // Debug only: the 503 is logged with this cause, and the connection logs the outage once.
        logger.debug({ err, organizationId }, 'request limit could not be checked: denying with 503');
        throw new LimiterUnavailable(policy, { cause: err });
      }
      // A request whose window ended while it waited stays out of the next window's count.
      if (count > 0 && admitted.latest().windowIndex <= window.index) admitted.add(organizationId, window.index);
      return {
        allowed: count > 0,
        limit: requests,
        remaining: count > 0 ? requests - count : 0,
        resetSeconds: window.resetSeconds,
        windowSeconds,
      };
    },
    available: () => !closed && redisReady(redis),
    async close() {
      closed = true;
      redis.off('ready', addBack);
      admitted.clear();
    },
  };
}
