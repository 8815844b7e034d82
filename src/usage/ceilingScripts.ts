import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis/connectRedis.js';

/**
 * One organization's usage count shared by every instance: a Redis hash, key
 * `ceiling:{<organizationId>}` (the organization is the hash tag: every script touches
 * one cluster slot). One key per organization rather than per period, because the
 * usage buffer's hooks name only the organization: any instance delivering a batch
 * finds the count without knowing the period. The `period` field (periodEnd in ms)
 * says which period the count is for; a verification of a later period starts a new one.
 *
 * Fields:
 * - `epoch`: the count's incarnation (a new period, an expired or lost key make a new
 *   one); a snapshot is only written to the incarnation it was opened on, and a call's
 *   place is only given back to the incarnation it was taken from;
 * - `admitted`: calls admitted by all instances in the period, in flight included,
 *   released ones subtracted; `acknowledged` / `inDoubt`: calls the key service
 *   acknowledged / calls sent and not yet acknowledged, by whichever instance delivered;
 * - `seq`: snapshots opened, in send order; `others` / `othersLow` / `ceiling` /
 *   `othersSeq`: the newest snapshot's `used − surelyIncluded` (usage the gateway's own
 *   count does not explain: other interfaces, calls not surely included), its
 *   `used − maybeIncluded`, its ceiling, and its sequence number.
 *
 * A call is admitted iff `others + admitted + 1 ≤ ceiling`.
 */

/** ARGV: a new epoch (used when the hash is new), lifetime in ms of a hash no snapshot has closed yet. */
const OPEN = `
if redis.call('HSETNX', KEYS[1], 'epoch', ARGV[1]) == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
local acknowledged = tonumber(redis.call('HGET', KEYS[1], 'acknowledged') or '0')
return {acknowledged, seq, redis.call('HGET', KEYS[1], 'epoch')}
`;

/**
 * ARGV: epoch and seq the snapshot was opened with, its surelyIncluded, the verification's
 * periodEnd (ms), used and ceiling, a new epoch, when the count expires (ms since the epoch).
 * Returns [written (1) or not (0), maybeIncluded, room left under the newest snapshot].
 */
const CLOSE = `
local h = KEYS[1]
local period = tonumber(redis.call('HGET', h, 'period') or '0')
local periodEnd = tonumber(ARGV[4])
if periodEnd < period then return {0, 0, 0} end
if periodEnd > period then
  if period > 0 or redis.call('HGET', h, 'epoch') ~= ARGV[1] then
    redis.call('DEL', h)
    redis.call('HSET', h, 'epoch', ARGV[7], 'period', ARGV[4], 'seq', 0)
    redis.call('PEXPIREAT', h, ARGV[8])
    return {0, 0, 0}
  end
  redis.call('HSET', h, 'period', ARGV[4])
  redis.call('PEXPIREAT', h, ARGV[8])
end
if redis.call('HGET', h, 'epoch') ~= ARGV[1] then return {0, 0, 0} end
local maybe = tonumber(redis.call('HGET', h, 'acknowledged') or '0') + tonumber(redis.call('HGET', h, 'inDoubt') or '0')
local used = tonumber(ARGV[5])
if tonumber(ARGV[2]) > tonumber(redis.call('HGET', h, 'othersSeq') or '0') then
  redis.call('HSET', h, 'others', used - tonumber(ARGV[3]), 'othersLow', used - maybe, 'ceiling', ARGV[6], 'othersSeq', ARGV[2])
end
local admitted = tonumber(redis.call('HGET', h, 'admitted') or '0')
local room = tonumber(redis.call('HGET', h, 'ceiling')) - tonumber(redis.call('HGET', h, 'others')) - admitted
return {1, maybe, room}
`;

/**
 * KEYS: the count, the claim's marker. ARGV: the caller's periodEnd (ms), calls wanted, the
 * marker's lifetime in ms. Grants what fits, at most what is wanted, and notes the grant in
 * the marker, so a claim whose answer was lost can be cancelled (CANCEL). Returns [granted
 * (−1: no snapshot of this period yet; −2: cancelled before it ran), room left, room left
 * were every call in doubt included in `used`, epoch].
 */
const CLAIM = `
local h = KEYS[1]
if not redis.call('SET', KEYS[2], 'none', 'NX', 'PX', ARGV[3]) then return {-2, 0, 0, ''} end
if redis.call('HGET', h, 'period') ~= ARGV[1] then return {-1, 0, 0, ''} end
local others = redis.call('HGET', h, 'others')
if not others then return {-1, 0, 0, ''} end
local ceiling = tonumber(redis.call('HGET', h, 'ceiling'))
local admitted = tonumber(redis.call('HGET', h, 'admitted') or '0')
local room = ceiling - tonumber(others) - admitted
local granted = math.max(0, math.min(tonumber(ARGV[2]), room))
local epoch = redis.call('HGET', h, 'epoch')
if granted > 0 then
  redis.call('HINCRBY', h, 'admitted', granted)
  redis.call('SET', KEYS[2], granted .. ':' .. epoch, 'PX', ARGV[3])
end
local roomLow = ceiling - tonumber(redis.call('HGET', h, 'othersLow')) - admitted - granted
return {granted, room - granted, roomLow, epoch}
`;

/**
 * KEYS: the count, a claim's marker. ARGV: the marker's lifetime in ms. Gives back what the
 * claim was granted (its answer never arrived, so nobody serves it), once; a claim that
 * had not run yet never will.
 */
const CANCEL = `
local noted = redis.call('GET', KEYS[2])
redis.call('SET', KEYS[2], 'cancelled', 'PX', ARGV[1])
if not noted then return 0 end
local granted, epoch = string.match(noted, '^(%d+):(.+)$')
if not granted or epoch ~= redis.call('HGET', KEYS[1], 'epoch') then return 0 end
redis.call('HINCRBY', KEYS[1], 'admitted', -tonumber(granted))
return tonumber(granted)
`;

/**
 * KEYS: the count, the change's marker. ARGV: the epoch the calls were admitted under
 * ('*': unknown), change of admitted, of acknowledged, of inDoubt, the marker's lifetime
 * in ms. Calls of another incarnation change nothing (they are not in its `admitted`);
 * calls of an unknown one change acknowledged and inDoubt only. A change is applied once:
 * one whose answer was lost (a timeout) is sent again with the same marker.
 */
const STEP = `
local h = KEYS[1]
if not redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[5]) then return 0 end
local epoch = redis.call('HGET', h, 'epoch')
if not redis.call('HGET', h, 'period') or (ARGV[1] ~= '*' and ARGV[1] ~= epoch) then return 0 end
if ARGV[2] ~= '0' and ARGV[1] == epoch then redis.call('HINCRBY', h, 'admitted', ARGV[2]) end
if ARGV[3] ~= '0' then redis.call('HINCRBY', h, 'acknowledged', ARGV[3]) end
if ARGV[4] ~= '0' then redis.call('HINCRBY', h, 'inDoubt', ARGV[4]) end
return 1
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    openCeilingSnapshot(
      key: string,
      newEpoch: string,
      lifetimeMs: number,
    ): Result<[acknowledged: number, seq: number, epoch: string], Context>;
    closeCeilingSnapshot(
      key: string,
      epoch: string,
      seq: number,
      surelyIncluded: number,
      periodEnd: number,
      used: number,
      ceiling: number,
      newEpoch: string,
      expireAtMs: number,
    ): Result<[written: number, maybeIncluded: number, room: number], Context>;
    claimCeiling(
      key: string,
      marker: string,
      periodEnd: string,
      want: number,
      markerLifetimeMs: number,
    ): Result<[granted: number, room: number, roomLow: number, epoch: string], Context>;
    cancelCeilingClaim(key: string, marker: string, markerLifetimeMs: number): Result<number, Context>;
    stepCeiling(
      key: string,
      marker: string,
      epoch: string,
      admitted: number,
      acknowledged: number,
      inDoubt: number,
      markerLifetimeMs: number,
    ): Result<number, Context>;
  }
}

/** Makes the ceiling scripts callable on the connection (EVALSHA, and EVAL after a NOSCRIPT). */
export function defineCeilingScripts(connection: RedisConnection): void {
  connection.defineCommand('openCeilingSnapshot', { numberOfKeys: 1, lua: OPEN });
  connection.defineCommand('closeCeilingSnapshot', { numberOfKeys: 1, lua: CLOSE });
  connection.defineCommand('claimCeiling', { numberOfKeys: 2, lua: CLAIM });
  connection.defineCommand('cancelCeilingClaim', { numberOfKeys: 2, lua: CANCEL });
  connection.defineCommand('stepCeiling', { numberOfKeys: 2, lua: STEP });
}

/** The key of one organization's shared count. */
export function ceilingKey(organizationId: string): string {
  return `ceiling:{${organizationId}}`;
}

/** The key marking one change or claim of an organization's count (same hash tag: same slot). */
export function markerKey(organizationId: string, id: string): string {
  return `ceiling:{${organizationId}}:once:${id}`;
}
