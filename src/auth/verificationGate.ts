import Bottleneck from 'bottleneck';
import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../errors.js';
import type { Verification } from '../upstream/keyServiceContract.js';

/** Anyone can make keys that pass form and checksum: paying callers never queue behind them. */
export type VerificationLane = 'known' | 'refresh' | 'unseen';

/** bottleneck priorities: 0 runs first, 9 last. */
const PRIORITY: Readonly<Record<VerificationLane, number>> = { known: 1, refresh: 4, unseen: 8 };

export interface VerificationGateOptions {
  /** Enough for the re-verifications of every organization with a ceiling; a flood costs the service little. */
  readonly maxConcurrent?: number;
  /** Past it the lowest lane's oldest waiter is dropped (503), or the newcomer if none is lower. */
  readonly maxWaiting?: number;
}

export type Verify = (keyHash: string) => Promise<Verification | null>;

export const OPEN_VERIFICATIONS = 8;

export function createVerificationGate(verify: Verify, options: VerificationGateOptions = {}) {
  const maxConcurrent = options.maxConcurrent ?? OPEN_VERIFICATIONS;
  const highWater = options.maxWaiting ?? 16;
  const limiter = new Bottleneck({ maxConcurrent, highWater, strategy: Bottleneck.strategy.OVERFLOW_PRIORITY });
  // Key hashes seen to verify successfully: one per active key, the least recent forgotten.
  const succeeded = new LRUCache<string, true>({ max: 10_000 });
  const busy = () => new UpstreamError('key-service', 'throttled', 'verify: too many verifications waiting');

  return {
    /** Verifies through the lanes: `known` for hashes seen to succeed, else `unseen`, unless told. */
    async verify(keyHash: string, lane?: VerificationLane): Promise<Verification | null> {
      const chosen = lane ?? (succeeded.has(keyHash) ? 'known' : 'unseen');
      // bottleneck takes in submissions in arrival order before sorting them: a known key must not
      // queue behind hundreds of unseen ones that would only be dropped, so those are turned away.
      if (chosen === 'unseen') {
        const { RECEIVED, QUEUED } = limiter.counts();
        if ((RECEIVED ?? 0) + (QUEUED ?? 0) >= maxConcurrent + highWater) throw busy();
      }
      const verification = await limiter
        .schedule({ priority: PRIORITY[chosen] }, () => verify(keyHash))
        .catch((err: unknown) => Promise.reject(err instanceof Bottleneck.BottleneckError ? busy() : err));
      // A revoked key answers as an unknown one: it has not succeeded.
      if (verification === null || verification.key.revokedAt !== null) succeeded.delete(keyHash);
      else succeeded.set(keyHash, true);
      return verification;
    },
    hasSucceeded: (keyHash: string) => succeeded.has(keyHash),
  };
}
