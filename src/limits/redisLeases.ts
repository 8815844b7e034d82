/**
 * The Redis mode of the request limit, taken from Redis in leases: per (organization,
 * window) key this instance takes several units of the shared reservoir in one atomic
 * call and serves the next requests from them without a round trip. The reservoir is
 * the only thing instances share, and a unit is only ever served by the instance that
 * took it from there, so together they still let at most `requests` through per window.
 *
 * The price is that units parked in one instance's lease cannot be served by another:
 * an organization can end a window refused while up to N instances × (1.5 times the size
 * of each one's last lease) units sit unused. Lease sizes keep that small (see FIRST_LEASE
 * and RENEW_AHEAD_FROM).
 */
export interface LeaseVerdict {
  readonly allowed: boolean;
  /** What Redis said was left at the last lease plus this instance's unused units: an estimate between leases. */
  readonly remaining: number;
}

export interface RedisLeasesOptions {
  /**
   * Takes `units` from the key's shared reservoir in one atomic call and resolves with
   * what is left there (negative: more was asked than existed).
   */
  readonly reserve: (key: string, units: number) => Promise<number>;
  /** How long a request may wait for a lease before it fails (the caller answers 503). */
  readonly deadlineMs: number;
}

export interface RedisLeases {
  /**
   * Takes one unit for `key` (which belongs to window `windowIndex`): at once from the
   * lease when it holds one, else after the key's lease call. Rejects when no lease
   * arrives within the deadline or the call fails.
   */
  take(key: string, windowIndex: number): LeaseVerdict | Promise<LeaseVerdict>;
  clear(): void;
}

/**
 * Lease sizes. The first call of a window takes one unit: nothing is known yet about
 * what other instances left. Later calls take 1/32 of what Redis said was left, at
 * most 256:
 * - 256 because every lease call is expensive beyond its round trip: bottleneck's
 *   Redis script publishes the reservoir change, which every instance receives and
 *   acts on. Measured by npm run bench: with leases of at most 64 the Redis mode
 *   cost ~35 µs of CPU per request more than the local limiter, with 256 ~9 µs.
 *   256 is reached only while more than 8192 units are left;
 * - 1/32 means a lease never holds more than ~3 % of what is left, and below 64 left
 *   every lease is a single unit, so near the end of the allowance almost nothing can
 *   be parked unused in another instance (the under-admission bound in the README).
 * A call also takes at least as many units as requests are waiting for it (still at
 * most 256): they take those units the moment it answers, so none of them are parked,
 * and a burst is served by one call instead of a queue of one-unit calls that would
 * push its last requests past the deadline.
 */
export const FIRST_LEASE = 1;
export const LEASE_DIVISOR = 32;
export const MAX_LEASE = 256;
/**
 * A lease of at least this many units is renewed ahead: once half of it is served, the
 * next call starts in the background, so at a steady rate requests find units waiting
 * instead of queueing (with a timer each) behind the call. Smaller leases, near the end
 * of the allowance, are never renewed ahead, so there the limit stays as tight as above;
 * ahead of time an instance holds at most 1.5 leases.
 */
export const RENEW_AHEAD_FROM = 8;

const DENIED: LeaseVerdict = { allowed: false, remaining: 0 };

interface KeyLease {
  readonly windowIndex: number;
  /** Units taken from Redis and not yet served. */
  units: number;
  /** What Redis said was left after the last lease call; null before the first answer. */
  redisLeft: number | null;
  /** Requests waiting for units (they size the next call). */
  waiting: number;
  /** The key's lease call in flight: only one at a time. */
  call: Promise<void> | null;
  callStartedMs: number;
  /** Units the last call asked for: the next call is started ahead once half of them are served. */
  lastAsked: number;
}

export function createRedisLeases(options: RedisLeasesOptions): RedisLeases {
  const { reserve, deadlineMs } = options;
  const leases = new Map<string, KeyLease>();
  let sweptWindow = -Infinity;

  /** `steady`: the request found units waiting (a steady rate), not a unit its own call brought. */
  const serve = (key: string, lease: KeyLease, steady: boolean): LeaseVerdict => {
    lease.units -= 1;
    if (steady && lease.call === null && lease.lastAsked >= RENEW_AHEAD_FROM && lease.units * 2 <= lease.lastAsked) {
      // Renewed ahead (see RENEW_AHEAD_FROM). Nobody waits for this call: a failure only
      // means that the request finding the lease empty makes the call itself.
      lease.call = startCall(key, lease);
    }
    return { allowed: true, remaining: Math.max(0, lease.redisLeft ?? 0) + lease.units };
  };
  // The reservoir only shrinks within a window: once Redis said nothing is left, asking
  // again is pointless. (Should Redis lose its data meanwhile, refusing errs on the safe side.)
  const spent = (lease: KeyLease): boolean => lease.units === 0 && lease.redisLeft !== null && lease.redisLeft <= 0;

  const askRedis = async (key: string, lease: KeyLease): Promise<void> => {
    // One microtask: requests arriving in the same turn are counted into this lease.
    await undefined;
    const units = leaseSize(lease);
    lease.lastAsked = units;
    const left = await reserve(key, units);
    if (typeof left !== 'number' || !Number.isFinite(left)) throw new Error(`unexpected reservoir ${String(left)}`);
    // When the reservoir went negative only its positive part existed; the rest was
    // never there, and other instances now see ≤ 0 and refuse.
    lease.units += Math.max(0, units + Math.min(0, left));
    lease.redisLeft = left;
  };

  const startCall = (key: string, lease: KeyLease): Promise<void> => {
    lease.callStartedMs = performance.now();
    const call: Promise<void> = askRedis(key, lease).finally(() => {
      if (lease.call === call) lease.call = null;
    });
    // Its waiters see a failure; once they gave up nobody listens, which must not end the process.
    call.catch(() => undefined);
    return call;
  };

  const waitForUnits = async (key: string, lease: KeyLease): Promise<LeaseVerdict> => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis gave no lease within ${deadlineMs} ms`)), deadlineMs);
    });
    lease.waiting += 1;
    try {
      for (;;) {
        // A call older than the deadline is given up on (Redis stalled): its late
        // answer still lands in the lease, but the next request asks again.
        if (lease.call === null || performance.now() - lease.callStartedMs > deadlineMs) {
          lease.call = startCall(key, lease);
        }
        await Promise.race([lease.call, expired]);
        if (lease.units > 0) return serve(key, lease, false);
        if (spent(lease)) return DENIED;
      }
    } finally {
      lease.waiting -= 1;
      clearTimeout(timer);
    }
  };

  // A past window's leases are never asked again (the key names the window): forget them.
  const sweep = (windowIndex: number): void => {
    for (const [key, lease] of leases) if (lease.windowIndex < windowIndex) leases.delete(key);
  };

  return {
    take(key, windowIndex) {
      if (windowIndex > sweptWindow) {
        sweep(windowIndex);
        sweptWindow = windowIndex;
      }
      let lease = leases.get(key);
      if (lease === undefined) {
        lease = { windowIndex, units: 0, redisLeft: null, waiting: 0, call: null, callStartedMs: 0, lastAsked: 0 };
        leases.set(key, lease);
      }
      if (lease.units > 0) return serve(key, lease, true);
      if (spent(lease)) return DENIED;
      return waitForUnits(key, lease);
    },
    clear() {
      leases.clear();
    },
  };
}

/** How many units the next call takes (see FIRST_LEASE). */
function leaseSize(lease: KeyLease): number {
  const planned = lease.redisLeft === null ? FIRST_LEASE : Math.floor(Math.max(0, lease.redisLeft) / LEASE_DIVISOR);
  return Math.min(MAX_LEASE, Math.max(1, planned, lease.waiting));
}
