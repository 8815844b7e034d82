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
 * are open per instance and `maxWaiting` more wait, first come first served; further
 * new keys are refused with 503 (the key service is busy) without a call. Keys already
 * verified are served from the cache and never meet this gate.
 *
 * A counter and a queue rather than a bottleneck limiter: bottleneck's local datastore
 * waits timer turns for every job (measured: ~5 ms per verification, ~350 a second at
 * most), and while the event stream is down every request is verified.
 */
export function gateVerifications(verify: Verify, options: VerificationGateOptions = {}): Verify {
  const maxConcurrent = options.maxConcurrent ?? 8;
  const maxWaiting = options.maxWaiting ?? 64;
  let open = 0;
  const waiting: Array<() => void> = [];

  const release = (): void => {
    const next = waiting.shift();
    if (next) next(); // the freed call passes straight to the next in line
    else open -= 1;
  };

  return async (keyHash) => {
    if (open < maxConcurrent) {
      open += 1;
    } else if (waiting.length < maxWaiting) {
      await new Promise<void>((resolve) => waiting.push(resolve));
    } else {
      throw new UpstreamError('key-service', 'throttled', 'verify: too many verifications waiting');
    }
    try {
      return await verify(keyHash);
    } finally {
      release();
    }
  };
}
