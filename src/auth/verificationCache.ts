import { LRUCache } from 'lru-cache';
import type { Verification } from '../upstream/keyServiceContract.js';

/**
 * Recent key-service answers by key hash, and those on their way. An answer is remembered only
 * under the generation it was asked in: one on its way while a revocation arrived never lands.
 */

export interface CachedVerification {
  readonly verification: Verification;
  /** When it was fetched, in the authenticator's clock (ms). */
  readonly fetchedAt: number;
  /** The gateway's acknowledged calls counted before the verify was sent: all in its `used`. */
  readonly acknowledgedBefore: number;
}

export type Verified = Omit<CachedVerification, 'fetchedAt'>;

export function createVerificationCache(options: {
  readonly max: number;
  readonly ttlMs: number;
  readonly unknownMax: number;
  readonly unknownTtlMs: number;
  readonly now: () => Date;
}) {
  // TTLs run on the authenticator's clock so they agree with its expiry decisions.
  const perf = { now: () => options.now().getTime() };
  const lru = <V extends object | true>(max: number, ttl: number) =>
    new LRUCache<string, V>({ max, ttl, ttlResolution: 0, perf });
  const verified = lru<CachedVerification>(options.max, options.ttlMs);
  const unknown = lru<true>(options.unknownMax, options.unknownTtlMs);
  /** Shared by concurrent requests for the same hash. */
  const pending = new Map<string, Promise<Verified | null>>();
  let generation = 0;

  return {
    generation: () => generation,
    get: (keyHash: string) => verified.get(keyHash),
    isUnknown: (keyHash: string) => unknown.get(keyHash) === true,
    shared(keyHash: string, ask: () => Promise<Verified | null>): Promise<Verified | null> {
      const waiting = pending.get(keyHash);
      if (waiting) return waiting;
      const asked = ask().finally(() => {
        if (pending.get(keyHash) === asked) pending.delete(keyHash);
      });
      pending.set(keyHash, asked);
      return asked;
    },
    remember(keyHash: string, answer: Verified, askedIn: number) {
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
      pending.delete(keyHash);
      verified.delete(keyHash);
      unknown.delete(keyHash);
    },
    dropOrganization(organizationId: string) {
      generation += 1;
      pending.clear();
      for (const [keyHash, entry] of [...verified.entries()]) {
        if (entry.verification.organization.id === organizationId) verified.delete(keyHash);
      }
    },
    clear() {
      generation += 1;
      pending.clear();
      verified.clear();
      unknown.clear();
    },
  };
}
