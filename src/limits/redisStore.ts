import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/** The shared Redis connection every per-organization limiter of this instance uses. */
export interface RedisStore {
  readonly connection: Bottleneck.IORedisConnection;
  /** True while Redis answers: only then is a limiter asked anything. */
  usable(): boolean;
  /** Calls `listener` whenever the connection to Redis drops. */
  onConnectionLost(listener: () => void): void;
  close(): Promise<void>;
}

/** A single Redis call may take this long before it is abandoned (the request then gets 503). */
export const REDIS_COMMAND_TIMEOUT_MS = 200;

/**
 * ioredis, configured so a request never waits for Redis:
 * - no offline queue: a command sent while disconnected fails at once instead of
 *   waiting for a reconnect (and then taking an allowance for a request long answered);
 * - maxRetriesPerRequest 0 and no resend: commands in flight when the connection drops
 *   fail at once and are not replayed later;
 * - commandTimeout: a slow Redis fails the command; socketTimeout: a Redis that stops
 *   answering altogether is dropped and reconnected, after which requests fail fast;
 * - reconnect every ≤ 500 ms, so the limiter is back within a second of Redis.
 */
export function connectRedisStore(redisUrl: string, logger: Logger): RedisStore {
  const client = new Redis(redisUrl, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    socketTimeout: 1000,
    connectTimeout: 1000,
    retryStrategy: (attempt: number) => Math.min(50 * attempt, 500),
  });
  // bottleneck subscribes through client.duplicate(), which keeps these options.
  const connection = new Bottleneck.IORedisConnection({ client, Redis });
  let connectionReady = false;
  let lost = false;
  let closed = false;

  // bottleneck sets up its scripts once both connections were first ready; a call
  // before that would wait for them (and take an allowance late), so nothing is
  // asked until then. (Its typings declare ready() but it is a promise property.)
  void (connection as unknown as { ready: Promise<{ subscriber: Redis }> }).ready.then(({ subscriber }) => {
    withoutFailingUnsubscribe(subscriber, logger);
    connectionReady = true;
  });
  connection.on('error', (err: unknown) => {
    if (!closed) logger.debug({ err }, 'redis limiter connection error');
  });
  const lostListeners: Array<() => void> = [];
  client.on('close', () => {
    if (closed) return;
    for (const listener of lostListeners) listener();
    if (lost) return;
    lost = true;
    logger.warn('redis is unreachable: requests are denied with 503 until it answers again');
  });
  client.on('ready', () => {
    if (!lost) return;
    lost = false;
    logger.info('redis answers again: the request limit is enforced again');
  });

  return {
    connection,
    usable: () => connectionReady && client.status === 'ready',
    onConnectionLost: (listener) => {
      lostListeners.push(listener);
    },
    async close() {
      closed = true;
      // disconnect(false): drop the sockets at once. QUIT (flush=true) would wait for a
      // Redis that may be gone, and without an offline queue it fails instead.
      await connection.disconnect(false);
    },
  };
}

/**
 * bottleneck drops a limiter's subscriptions inside an async forEach callback
 * (IORedisConnection.__removeLimiter__), where nobody awaits them: an UNSUBSCRIBE
 * failing while the subscriber reconnects would be an unhandled rejection, which
 * ends the process. A subscription that cannot be dropped now is dropped with the
 * connection anyway, so the failure is only logged.
 */
function withoutFailingUnsubscribe(subscriber: Redis, logger: Logger): void {
  const target = subscriber as unknown as { unsubscribe: (...channels: string[]) => Promise<unknown> };
  const unsubscribe = target.unsubscribe.bind(subscriber);
  target.unsubscribe = (...channels: string[]) =>
    unsubscribe(...channels).catch((err: unknown) => {
      logger.debug({ err, channels }, 'redis unsubscribe failed; the subscription ends with its connection');
      return 0;
    });
}
