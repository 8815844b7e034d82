import Bottleneck from 'bottleneck';
import { UpstreamError } from '../errors.js';
import type { Verification } from '../upstream/keyServiceClient.js';

export interface VerificationGateOptions {
  /** Verify calls one instance has open at the key service at most. Default 8. */
  readonly maxConcurrent?: number;
  /** Verifications waiting for a free call at most; beyond, a request gets 503 at once. Default 64. */
  readonly maxWaiting?: number;
}

export type Verify = (keyHash: string) => Promise<Verification | null>;

/**
 * Bounds the calls an instance makes to the key service's verify. A key's form and
 * checksum are public (key-service.md), so anyone can make keys that pass them: each
 * new one, unknown to the caches, costs a verify call. Without a bound a flood of such
 * keys would be passed on to the key service one for one, and the service that every
 * request needs would fall over for everyone. With it, at most `maxConcurrent` calls
 * are open per instance and `maxWaiting` more wait; further new keys are refused with
 * 503 (the key service is busy) without a call. Keys already verified are served
 * from the cache and never meet this gate.
 */
export function gateVerifications(verify: Verify, options: VerificationGateOptions = {}): Verify {
  const gate = new Bottleneck({
    maxConcurrent: options.maxConcurrent ?? 8,
    highWater: options.maxWaiting ?? 64,
    // A full queue drops the newest job: the request that found it full gets its 503 at once.
    strategy: Bottleneck.strategy.OVERFLOW,
  });
  return async (keyHash) => {
    try {
      return await gate.schedule(() => verify(keyHash));
    } catch (err: unknown) {
      if (err instanceof Bottleneck.BottleneckError) {
        throw new UpstreamError('key-service', 'throttled', 'verify: too many verifications waiting');
      }
      throw err;
    }
  };
}
