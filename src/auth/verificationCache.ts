import { LRUCache } from 'lru-cache';
import type { Verification } from '../upstream/keyServiceContract.js';

/**
 * Recent key-service answers, by key hash: verifications (bounded, short-lived) and
 * hashes no key has (bounded, shorter-lived). It knows nothing of the event stream;
 * the authenticator decides when an entry may be used and what to drop.
 *
 * Every invalidation starts a new generation. An answer is remembered only under the
 * generation it was asked in, so an answer that was on its way while a revocation
 * arrived can never land in the cache after it.
 */

export interface CachedVerification {
  readonly verification: Verification;
  /** When it was fetched, in the authenticator's clock (ms). */
  readonly fetchedAt: number;
  /** The gateway's acknowledged calls counted before the verify was sent: all in its `used`. */
  readonly acknowledgedBefore: number;
}

export interface VerificationCacheOptions {
  readonly max: number;
  /** Kept at most this long (the authenticator decides whether an entry is fresh or stale). */
  readonly ttlMs: number;
  readonly unknownMax: number;
  readonly unknownTtlMs: number;
  readonly now: () => Date;
}

export function createVerificationCache(options: VerificationCacheOptions) {
  // TTLs run on the authenticator's clock so they agree with its expiry decisions.
  const perf = { now: () => options.now().getTime() };
  const verified = new LRUCache<string, CachedVerification>({
    max: options.max,
    ttl: options.ttlMs,
    ttlResolution: 0,
    perf,
  });
  const unknown = new LRUCache<string, true>({
    max: options.unknownMax,
    ttl: options.unknownTtlMs,
    ttlResolution: 0,
    perf,
  });
  let generation = 0;

  const invalidated = () => {
    generation += 1;
  };

  return {
    generation: () => generation,
    get: (keyHash: string) => verified.get(keyHash),
    isUnknown: (keyHash: string) => unknown.get(keyHash) === true,
    remember(keyHash: string, answer: Omit<CachedVerification, 'fetchedAt'>, askedIn: number) {
      if (askedIn !== generation) return;
      unknown.delete(keyHash);
      verified.set(keyHash, { ...answer, fetchedAt: perf.now() });
    },
    rememberUnknown(keyHash: string, askedIn: number) {
      if (askedIn !== generation) return;
      verified.delete(keyHash);
      unknown.set(keyHash, true);
    },
    dropKey(keyHash: string) {
      invalidated();
      verified.delete(keyHash);
      unknown.delete(keyHash);
    },
    dropOrganization(organizationId: string) {
      invalidated();
      const stale = [...verified.entries()]
        .filter(([, entry]) => entry.verification.organization.id === organizationId)
        .map(([keyHash]) => keyHash);
      for (const keyHash of stale) verified.delete(keyHash);
    },
    clear() {
      invalidated();
      verified.clear();
      unknown.clear();
    },
  };
}
