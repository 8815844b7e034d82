import Bottleneck from 'bottleneck';
import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../errors.js';
import type { Verification } from '../upstream/keyServiceContract.js';

/**
 * Who waits for the key service, in which order. Anyone can make keys that pass form and
 * checksum, and each new one costs a verify call, so paying callers must never queue behind
 * them: a key seen to succeed goes first, a background refresh next, a hash never seen to
 * succeed last.
 */
export type VerificationLane = 'known' | 'refresh' | 'unseen';

/** bottleneck priorities: 0 runs first, 9 last. */
const PRIORITY: Readonly<Record<VerificationLane, number>> = { known: 1, refresh: 4, unseen: 8 };

export interface VerificationGateOptions {
  /**
   * Verify calls open at once: enough to keep up with re-verifications of every organization
   * with a ceiling, few enough that a flood of made-up keys costs the service little.
   */
  readonly maxConcurrent?: number;
  /**
   * Verifications waiting at most (two rounds of the open calls); past it the lowest lane's
   * oldest waiter is dropped (503), or the newcomer when nobody waits in a lower lane.
   */
  readonly maxWaiting?: number;
}

export type Verify = (keyHash: string) => Promise<Verification | null>;

/** The default of `maxConcurrent`. */
export const OPEN_VERIFICATIONS = 8;

export function createVerificationGate(verify: Verify, options: VerificationGateOptions = {}) {
  const maxConcurrent = options.maxConcurrent ?? OPEN_VERIFICATIONS;
  const maxWaiting = options.maxWaiting ?? 16;
  const limiter = new Bottleneck({
    maxConcurrent,
    highWater: maxWaiting,
    strategy: Bottleneck.strategy.OVERFLOW_PRIORITY,
  });
  // Key hashes seen to verify successfully: one per active key, the least recent forgotten.
  const succeeded = new LRUCache<string, true>({ max: 10_000 });
  const busy = () => new UpstreamError('key-service', 'throttled', 'verify: too many verifications waiting');

  return {
    /** Verifies through the lanes: `known` for hashes seen to succeed, else `unseen`, unless told. */
    async verify(keyHash: string, lane?: VerificationLane): Promise<Verification | null> {
      const chosen = lane ?? (succeeded.has(keyHash) ? 'known' : 'unseen');
      // bottleneck takes in submissions one at a time, in arrival order, before it sorts them
      // by priority: a known key must not queue behind hundreds of unseen submissions that
      // would only be dropped. The lowest lane is turned away while the queue is already full.
      if (chosen === 'unseen') {
        const { RECEIVED, QUEUED } = limiter.counts();
        if ((RECEIVED ?? 0) + (QUEUED ?? 0) >= maxConcurrent + maxWaiting) throw busy();
      }
      let verification: Verification | null;
      try {
        verification = await limiter.schedule({ priority: PRIORITY[chosen] }, () => verify(keyHash));
      } catch (err: unknown) {
        throw err instanceof Bottleneck.BottleneckError ? busy() : err;
      }
      // A revoked key answers as an unknown one: it has not succeeded.
      if (verification === null || verification.key.revokedAt !== null) succeeded.delete(keyHash);
      else succeeded.set(keyHash, true);
      return verification;
    },
    hasSucceeded: (keyHash: string) => succeeded.has(keyHash),
  };
}
