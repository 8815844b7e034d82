import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis/connectRedis.js';

/**
 * One organization's count for one window, taken atomically in Redis.
 *
 * KEYS[1] is a hash: field `n` holds the requests every instance admitted; one field per
 * instance holds what that instance admitted (its marker). An instance passes what it
 * knows it admitted here; when Redis holds less (it restarted empty, or a failover lost
 * writes), the difference is added back first, so a window's count is rebuilt by the
 * instances that made it instead of starting over at zero.
 *
 * ARGV: instance id, what that instance admitted here, the allowance, the key's
 * lifetime in ms, and how many requests to take (0 only adds back). Requests arriving
 * together ask in one call; each is granted or refused whole, never parked for later.
 * Returns [granted, the window's count after them].
 */
const LUA = `
local mine = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local known = tonumber(ARGV[2])
if mine < known then
  redis.call('HINCRBY', KEYS[1], 'n', known - mine)
  redis.call('HSET', KEYS[1], ARGV[1], known)
end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local granted = math.min(tonumber(ARGV[5]), tonumber(ARGV[3]) - n)
if granted <= 0 then return {0, n} end
n = redis.call('HINCRBY', KEYS[1], 'n', granted)
redis.call('HINCRBY', KEYS[1], ARGV[1], granted)
if n == granted then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {granted, n}
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    takeFromWindow(
      key: string,
      instanceId: string,
      admittedHere: number,
      allowance: number,
      lifetimeMs: number,
      take: number,
    ): Result<[granted: number, count: number], Context>;
  }
}

/** Makes `takeFromWindow` callable on the connection (ioredis sends EVALSHA, and EVAL after a NOSCRIPT). */
export function defineWindowScript(connection: RedisConnection): void {
  connection.defineCommand('takeFromWindow', { numberOfKeys: 1, lua: LUA });
}

/**
 * The key of one organization's window. The organization is the hash tag: every key a
 * script touches sits in one cluster slot.
 */
export function windowKey(organizationId: string, windowIndex: number): string {
  return `gateway:limit:{${organizationId}}:${windowIndex}`;
}
