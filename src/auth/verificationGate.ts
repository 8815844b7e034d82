import Bottleneck from 'bottleneck';
import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../errors.js';
import type { Verification } from '../upstream/keyServiceContract.js';

/**
 * Who waits for the key service, in which order. A key's form and checksum are public
 * (key-service.md), so anyone can make keys that pass them, and each new one costs a
 * verify call. Paying callers must never queue behind such keys: a re-verification of a
 * key this instance has seen succeed goes first, a background refresh of one next, a
 * hash never seen to succeed last.
 */
export type VerificationLane = 'known' | 'refresh' | 'unseen';

/** bottleneck priorities: 0 runs first, 9 last. Gaps leave room for lanes to come. */
const PRIORITY: Readonly<Record<VerificationLane, number>> = { known: 1, refresh: 4, unseen: 8 };

export interface VerificationGateOptions {
  /**
   * Verify calls one instance has open at the key service at most. Default 8: enough to
   * keep up with re-verifications of every organization with a ceiling (one per 5 s each),
   * few enough that a flood of made-up keys costs the service at most this many calls at once.
   */
  readonly maxConcurrent?: number;
  /**
   * Verifications waiting at most; past it the lowest lane's oldest waiter is dropped (503),
   * or the newcomer when nobody waits in a lower lane. Default 16: two rounds of the open calls,
   * so a waiter is served within a few of the key service's answer times; a longer queue would
   * only hold made-up keys that bottleneck takes in one by one ahead of a known key.
   */
  readonly maxWaiting?: number;
}

export type Verify = (keyHash: string) => Promise<Verification | null>;

/** The default of `maxConcurrent`: verify calls open at once. */
export const OPEN_VERIFICATIONS = 8;

/** Scheduled through bottleneck, the project's scheduler: priorities, a high water mark, and a drop strategy. */
export function createVerificationGate(verify: Verify, options: VerificationGateOptions = {}) {
  const maxConcurrent = options.maxConcurrent ?? OPEN_VERIFICATIONS;
  const maxWaiting = options.maxWaiting ?? 16;
  const limiter = new Bottleneck({
    maxConcurrent,
    highWater: maxWaiting,
    // Full: drop the oldest waiter of a lower priority than the newcomer, else the newcomer.
    strategy: Bottleneck.strategy.OVERFLOW_PRIORITY,
  });
  // Key hashes seen to verify successfully: one per active key, the least recent forgotten.
  const succeeded = new LRUCache<string, true>({ max: 10_000 });

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
        if (err instanceof Bottleneck.BottleneckError) throw busy();
        throw err;
      }
      // A revoked key answers as an unknown one (principalFor): it has not succeeded.
      if (verification === null || verification.key.revokedAt !== null) succeeded.delete(keyHash);
      else succeeded.set(keyHash, true);
      return verification;
    },
    hasSucceeded: (keyHash: string) => succeeded.has(keyHash),
  };
}

function busy(): UpstreamError {
  return new UpstreamError('key-service', 'throttled', 'verify: too many verifications waiting');
}
