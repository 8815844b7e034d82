import type { Result } from 'ioredis';
import type { RedisConnection } from '../redis/connectRedis.js';

/**
 * One organization's admission, taken atomically (src/usage/README.md, "What state lives where").
 * KEYS: the window, the ceiling, the calls being sent; ARGV as `admit` below names them (want 0 only
 * writes the counts; ceiling '' for none). Without a ceiling the field is still written where a ceiling
 * key exists, so the counts are whole once one is set. The window's count follows what each instance
 * says it holds, down too: units it leased and did not serve, or whose answer it lost, go back. The fourth
 * value returned is the calls whose place in `used` is in doubt ("The ceiling's arithmetic").
 */
const FOLD_AFTER_MS = 60_000;

const ADMIT = `
local id = ARGV[1]
local mine = tonumber(redis.call('HGET', KEYS[1], id) or '0')
local known = tonumber(ARGV[2])
if known >= 0 and mine ~= known then
  redis.call('HINCRBY', KEYS[1], 'n', known - mine)
  redis.call('HSET', KEYS[1], id, known)
end
local n = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')
local granted = math.max(0, math.min(tonumber(ARGV[5]), tonumber(ARGV[3]) - n))
local room, doubt = 0, 0
local hasCeiling = ARGV[6] ~= ''
if hasCeiling or redis.call('EXISTS', KEYS[2]) == 1 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local waiting, acknowledged, inFlight = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
  local baseWaiting, baseAcknowledged, folded = 0, 0, false
  -- The period the dead instances' calls in gone were counted for: a later one starts without them.
  local period = tonumber(ARGV[15]) or 0
  local goneFor = tonumber(redis.call('HGET', KEYS[2], 'gone period') or '0')
  local turn = goneFor > 0 and period > goneFor
  if period > goneFor then redis.call('HSET', KEYS[2], 'gone period', period) end
  local fields = redis.call('HGETALL', KEYS[2])
  for i = 1, #fields, 2 do
    local w, a, f, u = string.match(fields[i + 1], '^(-?%d+) (%d+) (%d+) (%d+)$')
    if fields[i] ~= id and w and turn and tonumber(u) <= now then
      -- Dead instances' waiting belongs to the period that ended: their acknowledgements stay in the sums.
      acknowledged = acknowledged + tonumber(a)
      baseAcknowledged, folded = baseAcknowledged + tonumber(a), true
      if fields[i] ~= 'gone' then redis.call('HDEL', KEYS[2], fields[i]) end
    elseif fields[i] ~= id and w then
      waiting = waiting + tonumber(w)
      acknowledged = acknowledged + tonumber(a)
      if tonumber(u) > now then
        inFlight = inFlight + tonumber(f)
      elseif fields[i] == 'gone' then
        baseWaiting, baseAcknowledged = baseWaiting + tonumber(w), baseAcknowledged + tonumber(a)
      elseif tonumber(u) + ${FOLD_AFTER_MS} < now then
        baseWaiting, baseAcknowledged, folded = baseWaiting + tonumber(w), baseAcknowledged + tonumber(a), true
        redis.call('HDEL', KEYS[2], fields[i])
      end
    elseif w and tonumber(a) > tonumber(ARGV[10]) then
      -- This instance forgot the organization (idle) and counts from zero again: what it wrote stays in the sums, in gone.
      waiting, acknowledged = waiting + tonumber(w), acknowledged + tonumber(a)
      baseWaiting, baseAcknowledged, folded = baseWaiting + tonumber(w), baseAcknowledged + tonumber(a), true
    end
  end
  if folded then redis.call('HSET', KEYS[2], 'gone', baseWaiting .. ' ' .. baseAcknowledged .. ' 0 0') end
  local expires = now + tonumber(ARGV[12])
  if hasCeiling then
    local ackedSince = math.max(0, acknowledged - tonumber(ARGV[8]))
    room = tonumber(ARGV[6]) - tonumber(ARGV[7]) - waiting - inFlight - ackedSince
    granted = math.max(0, math.min(granted, room))
    room = room - granted
    redis.call('PEXPIRE', KEYS[2], ARGV[13])
    doubt = ackedSince + tonumber(ARGV[14])
    local sending = redis.call('HGETALL', KEYS[3])
    for i = 1, #sending, 2 do
      local s, u = string.match(sending[i + 1], '^(%d+) (%d+)$')
      if sending[i] ~= id and s then
        if tonumber(u) > now then doubt = doubt + tonumber(s) else redis.call('HDEL', KEYS[3], sending[i]) end
      end
    end
    redis.call('HSET', KEYS[3], id, ARGV[14] .. ' ' .. expires)
    redis.call('PEXPIRE', KEYS[3], ARGV[13])
  end
  redis.call('HSET', KEYS[2], id, ARGV[9] .. ' ' .. ARGV[10] .. ' ' .. (tonumber(ARGV[11]) + granted) .. ' ' .. expires)
end
if granted > 0 then
  n = redis.call('HINCRBY', KEYS[1], 'n', granted)
  redis.call('HINCRBY', KEYS[1], id, granted)
end
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return {granted, n, room, doubt}
`;

/** KEYS[1]: the ceiling. Returns the calls acknowledged, summed over instances. */
const ACKNOWLEDGED = `
local acknowledged = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 2, #fields, 2 do
  local a = string.match(fields[i], '^-?%d+ (%d+) ')
  if a then acknowledged = acknowledged + tonumber(a) end
end
return acknowledged
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    admit(
      windowKey: string,
      ceilingKey: string,
      sendingKey: string,
      instanceId: string,
      /** What this instance holds in the window (served or leased): Redis's count follows it, up or down; -1 leaves it. */
      heldInWindow: number,
      allowance: number,
      windowLifetimeMs: number,
      want: number,
      ceiling: number | '',
      used: number,
      acknowledgedBefore: number,
      waiting: number,
      acknowledged: number,
      inFlight: number,
      fieldLifetimeMs: number,
      ceilingLifetimeMs: number,
      sending: number,
      /** The end (ms) of the period the verification is for; '' without one. */
      periodEnd: number | '',
    ): Result<[granted: number, count: number, room: number, doubt: number], Context>;
    acknowledgedCalls(ceilingKey: string): Result<number, Context>;
  }
}

/** Makes the scripts callable on the connection (ioredis sends EVALSHA, and EVAL after a NOSCRIPT). */
export function defineAdmissionScripts(connection: RedisConnection): void {
  connection.defineCommand('admit', { numberOfKeys: 3, lua: ADMIT });
  connection.defineCommand('acknowledgedCalls', { numberOfKeys: 1, lua: ACKNOWLEDGED });
}

/** The organization's request count in one window. */
export function windowKey(organizationId: string, windowIndex: number): string {
  return `gateway:{${organizationId}}:limit:${windowIndex}`;
}

/** The organization's calls under its ceiling, by instance. */
export function ceilingKey(organizationId: string): string {
  return `gateway:{${organizationId}}:ceiling`;
}

/** The organization's calls on their way to the key service, by instance: "calls until". */
export function sendingKey(organizationId: string): string {
  return `gateway:{${organizationId}}:sending`;
}
