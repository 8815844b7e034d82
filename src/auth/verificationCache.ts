import { LRUCache } from 'lru-cache';
import type { Verification } from '../upstream/keyServiceContract.js';

/**
 * Recent key-service answers by key hash: verifications, and hashes no key has. Every
 * invalidation starts a new generation, and an answer is remembered only under the
 * generation it was asked in: one on its way while a revocation arrived never lands after it.
 */

export interface CachedVerification {
  readonly verification: Verification;
  /** When it was fetched, in the authenticator's clock (ms). */
  readonly fetchedAt: number;
  /** The gateway's acknowledged calls counted before the verify was sent: all in its `used`. */
  readonly acknowledgedBefore: number;
}

export function createVerificationCache(options: {
  readonly max: number;
  readonly ttlMs: number;
  readonly unknownMax: number;
  readonly unknownTtlMs: number;
  readonly now: () => Date;
}) {
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
      generation += 1;
      verified.delete(keyHash);
      unknown.delete(keyHash);
    },
    dropOrganization(organizationId: string) {
      generation += 1;
      for (const [keyHash, entry] of [...verified.entries()]) {
        if (entry.verification.organization.id === organizationId) verified.delete(keyHash);
      }
    },
    clear() {
      generation += 1;
      verified.clear();
      unknown.clear();
    },
  };
}
