import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { type RedisConnection, redisReady, withinCommandTimeout } from '../redis/connectRedis.js';

/** What the fleet learned about keys: which ones any instance saw verify successfully. Never the key, nor its hash. */
export interface KnownKeys {
  /** Any instance saw it succeed within KNOWN_KEY_TTL_SECONDS; false when that cannot be read in time. */
  has(keyHash: string): Promise<boolean>;
  /** It succeeded here (called per verification, not per request). */
  learn(keyHash: string): void;
  /** It failed or was revoked. */
  forget(keyHash: string): void;
}

/** A key not verified by any instance for a day is a stranger again. */
export const KNOWN_KEY_TTL_SECONDS = 86_400;
/** An instance renews a key's mark at most this often. */
const RENEW_AFTER_MS = 3_600_000;

/**
 * A mark per key in Redis, `gateway:known-key:<mark>`, expiring after KNOWN_KEY_TTL_SECONDS. The mark is a hash of
 * the key hash under a name of its own: what Redis holds cannot be sent to the key service, nor found in its store.
 */
export function redisKnownKeys(redis: RedisConnection, logger: Logger): KnownKeys {
  const renewed = new LRUCache<string, true>({ max: 10_000, ttl: RENEW_AFTER_MS });
  const markOf = (keyHash: string) =>
    `gateway:known-key:${createHash('sha256').update(`gateway known key\n${keyHash}`).digest('hex').slice(0, 32)}`;
  const quietly = (call: Promise<unknown>, what: string) =>
    call.catch((err: unknown) => logger.debug({ err }, `known key could not be ${what}`));

  return {
    async has(keyHash) {
      if (!redisReady(redis)) return false;
      // A stranger is only served in the lowest lane: when Redis cannot say, that is all it costs.
      return withinCommandTimeout(() => redis.exists(markOf(keyHash))).then(
        (found) => found === 1,
        () => false,
      );
    },
    learn(keyHash) {
      if (renewed.has(keyHash) || !redisReady(redis)) return;
      renewed.set(keyHash, true);
      void quietly(redis.set(markOf(keyHash), '1', 'EX', KNOWN_KEY_TTL_SECONDS), 'written');
    },
    forget(keyHash) {
      renewed.delete(keyHash);
      if (redisReady(redis)) void quietly(redis.del(markOf(keyHash)), 'removed');
    },
  };
}
