import Bottleneck from 'bottleneck';
import type { Logger } from 'pino';
import { BottleneckPromise } from './bottleneckPromise.js';
import { fixedWindowAt } from './fixedWindow.js';
import { limiterUnavailable } from './limiterUnavailable.js';
import { createLocalWindowCounts, type LocalWindowCounts } from './localWindowCounts.js';
import { createRedisLeases, type LeaseVerdict } from './redisLeases.js';
import type { RedisStore } from './redisStore.js';
import type { LimitDecision, RequestLimiter } from './requestLimiter.js';

export interface RequestLimiterOptions {
  /** RATE_LIMIT_REQUESTS: allowance per organization per window. */
  readonly requests: number;
  /** RATE_LIMIT_WINDOW_SECONDS. */
  readonly windowSeconds: number;
  /** REDIS_URL: null keeps the limit in this process only. */
  readonly redisUrl: string | null;
  readonly logger: Logger;
  /** The clock that places a request in its window (tests move it). */
  readonly now?: () => Date;
  /** How long a request may wait for Redis before it is denied with 503 (default 200 ms). */
  readonly redisDeadlineMs?: number;
}

/** The limiter gateway.ts builds: the middleware's RequestLimiter, plus readiness. */
export interface ManagedRequestLimiter extends RequestLimiter {
  /** False while the limit cannot be enforced (Redis not answering): for the readiness probe. */
  available(): boolean;
}

const GROUP_ID = 'gateway-request-limit';
/**
 * A window's limiter outlives its window by this much, so an instance whose clock
 * runs a little behind still finds the window's shared count in Redis.
 */
const CLOCK_SKEW_MARGIN_MS = 10_000;

/**
 * The per-organization request limit. It exists so one organization's traffic (a
 * runaway script, a leaked key) cannot exhaust the platform for every other
 * organization, and so the spec's promise of a request limit holds on every instance.
 *
 * Shape: a fixed window of `requests` per `windowSeconds`. Each (organization,
 * window) pair is one key of a bottleneck Group whose reservoir starts at
 * `requests`, taken from with incrementReservoir (a single atomic Lua call in Redis
 * mode); the verdict is read from what is left. It never waits in bottleneck's queue
 * (schedule() would hold the request until the next window, and between instances its
 * submit/register steps can leave a job queued). Keying by window rather than using
 * reservoirRefreshInterval makes the reset time exact and the same on every instance,
 * and avoids increment_reservoir's refresh running after the decrement (which would
 * let one request per window through uncounted).
 *
 * With REDIS_URL the Group uses bottleneck's ioredis datastore, so every instance on
 * that Redis draws from the same reservoir: together they let at most `requests`
 * through per window. An instance takes its units in leases of several at once
 * (redisLeases), so most requests need no Redis call. When Redis cannot answer
 * within the deadline, the request is denied with 503 and never passes unlimited.
 * Without REDIS_URL the same keys are counted in this process by localWindowCounts
 * (bottleneck's local datastore waits a timer turn on every call).
 */
export async function createRequestLimiter(options: RequestLimiterOptions): Promise<ManagedRequestLimiter> {
  const { requests, windowSeconds, logger } = options;
  const windowMs = windowSeconds * 1000;
  const now = options.now ?? (() => new Date());
  const deadlineMs = options.redisDeadlineMs ?? 200;
  const policy = { limit: requests, windowSeconds };
  // ioredis is loaded only when there is a Redis to talk to: it costs ~10 MB of memory.
  const store: RedisStore | null =
    options.redisUrl === null ? null : (await import('./redisStore.js')).connectRedisStore(options.redisUrl, logger);
  let closed = false;

  const group = new Bottleneck.Group({
    id: GROUP_ID,
    reservoir: requests,
    // A window's limiter (and, in Redis, its keys) goes once its window is surely over.
    timeout: windowMs + CLOCK_SKEW_MARGIN_MS,
    Promise: BottleneckPromise,
    ...(store ? { datastore: 'ioredis', connection: store.connection } : {}),
  });
  group.on('created', (limiter: Bottleneck, key: string) => {
    limiter.on('error', (err: unknown) => {
      if (!closed) logger.debug({ err, key }, 'request limiter error');
    });
    // A limiter whose Redis setup failed (the connection dropped, or Redis stalled,
    // while it was being created) rejects every later call; forget it so the next
    // request builds a fresh one.
    limiter.ready().catch(() => forgetLimiter(group, key, limiter));
  });

  // With Redis the units come in leases; without it the counts stay in this process,
  // taken synchronously (see localWindowCounts).
  const counts: WindowVerdicts =
    store === null
      ? localVerdicts(createLocalWindowCounts(requests, windowMs + CLOCK_SKEW_MARGIN_MS))
      : createRedisLeases({ reserve: (key, units) => group.key(key).incrementReservoir(-units), deadlineMs });
  // Units held when the connection drops may belong to counts Redis no longer has (a
  // restart without persistence starts every window over): they are dropped, so the
  // limit errs on the side of fewer requests, never more.
  store?.onConnectionLost(() => counts.clear());

  return {
    async take(organizationId: string): Promise<LimitDecision> {
      const nowMs = now().getTime();
      const window = fixedWindowAt(nowMs, windowMs);
      if (closed || (store !== null && !store.usable())) {
        throw limiterUnavailable(policy, new Error(closed ? 'limiter closed' : 'redis not connected'));
      }
      const key = `${organizationId}:${window.index}`;
      let decided: LeaseVerdict;
      try {
        const pending = counts.take(key, window.index, nowMs);
        // Most verdicts are known at once (local counts, a unit left in the lease): no extra await for them.
        decided = pending instanceof Promise ? await pending : pending;
      } catch (err: unknown) {
        // Debug only: the 503 itself is logged with this cause, and the store logs the outage once.
        logger.debug({ err, organizationId }, 'request limit could not be checked: denying with 503');
        throw limiterUnavailable(policy, err);
      }
      return {
        allowed: decided.allowed,
        limit: requests,
        remaining: decided.remaining,
        resetSeconds: window.resetSeconds,
        windowSeconds,
      };
    },
    available: () => !closed && (store === null || store.usable()),
    async close() {
      if (closed) return;
      closed = true;
      counts.clear();
      if (store) await store.close();
      else await Promise.all(group.keys().map((key) => group.deleteKey(key)));
    },
  };
}

/** Where a verdict comes from: Redis leases or this process's counts. */
interface WindowVerdicts {
  take(key: string, windowIndex: number, nowMs: number): LeaseVerdict | Promise<LeaseVerdict>;
  clear(): void;
}

function localVerdicts(local: LocalWindowCounts): WindowVerdicts {
  return {
    take(key, _windowIndex, nowMs) {
      const left = local.take(key, nowMs);
      return { allowed: left >= 0, remaining: Math.max(0, left) };
    },
    clear: () => local.clear(),
  };
}

/**
 * Group.deleteKey would also delete the key's Redis state that every other instance
 * counts on; a limiter whose setup failed holds nothing worth keeping, so only our
 * local reference is dropped. bottleneck's Group offers no public call for that.
 */
function forgetLimiter(group: Bottleneck.Group, key: string, limiter: Bottleneck): void {
  const instances = (group as unknown as { instances?: Record<string, Bottleneck | undefined> }).instances;
  if (instances && instances[key] === limiter) delete instances[key];
}
