import { LRUCache } from 'lru-cache';
import { UpstreamError } from '../errors.js';
import type { AnswerCache, CacheResult } from './answerCache.js';
import { forSite, type StoredAnswer, serializeAnswer } from './serializeAnswer.js';

export interface AnswerCacheOptions {
  /** CACHE_TTL_SECONDS: how long an answer is served without asking the platform. 0 turns the cache off. */
  readonly ttlSeconds: number;
  /**
   * Stale-if-error: when the platform fails (UpstreamError: unreachable, timeout, bad
   * answer, throttled), an answer loaded at most this many seconds ago is served
   * instead of the 502/504, flagged stale. Default 300 (five minutes): long enough to
   * ride out a platform restart, short enough that nobody acts on old rankings.
   */
  readonly staleSeconds?: number;
  /** Bound on memory: bytes of keys plus bodies (default 64 MiB), beside at most 10 000 entries. */
  readonly maxBytes?: number;
  readonly now?: () => Date;
}

interface Entry {
  readonly stored: StoredAnswer;
  /** When the platform answered (ms since the epoch). */
  readonly loadedAt: number;
}

const ENTRY_OVERHEAD_BYTES = 128;

/**
 * The brief cache in front of the platform (lru-cache, bounded by entries and bytes).
 * Keys lead with the organization id and name the site as the platform resolves it
 * (cacheKeyFor), so no entry and no in-flight load is ever shared across organizations,
 * while spellings of one site share both; each caller still gets its own spelling
 * echoed. Identical requests that arrive while a load runs wait for that same load. Only successful answers are stored: a
 * failed load rejects every waiter and leaves nothing behind.
 */
export function createAnswerCache(options: AnswerCacheOptions): AnswerCache {
  if (options.ttlSeconds <= 0) {
    // No cache: every request loads afresh; nothing is kept.
    return {
      ttlSeconds: 0,
      get: async (_key, load, site) => ({ answer: forSite(serializeAnswer(await load()), site), status: 'miss' }),
    };
  }
  const ttlMs = options.ttlSeconds * 1000;
  const staleMs = (options.staleSeconds ?? 300) * 1000;
  const now = options.now ?? (() => new Date());
  const entries = new LRUCache<string, Entry>({
    max: 10_000,
    maxSize: options.maxBytes ?? 64 * 1024 * 1024,
    sizeCalculation: (entry, key) =>
      Buffer.byteLength(entry.stored.body) + entry.stored.etag.length + key.length * 2 + ENTRY_OVERHEAD_BYTES,
  });
  const loads = new Map<string, Promise<StoredAnswer>>();

  const startLoad = (key: string, load: () => Promise<unknown>): Promise<StoredAnswer> => {
    const loading = load().then((payload) => {
      const stored = serializeAnswer(payload);
      entries.set(key, { stored, loadedAt: now().getTime() });
      return stored;
    });
    loads.set(key, loading);
    const forget = () => {
      if (loads.get(key) === loading) loads.delete(key);
    };
    loading.then(forget, forget);
    return loading;
  };

  return {
    ttlSeconds: options.ttlSeconds,
    async get(key, load, site): Promise<CacheResult> {
      const kept = entries.get(key);
      if (kept) {
        const age = now().getTime() - kept.loadedAt;
        if (age < ttlMs)
          return { answer: forSite(kept.stored, site), status: 'hit', ageSeconds: Math.floor(age / 1000) };
        if (age > staleMs) entries.delete(key); // too old even to stand in for a failure
      }
      const waiting = loads.get(key);
      try {
        const stored = await (waiting ?? startLoad(key, load));
        return { answer: forSite(stored, site), status: 'miss', ageSeconds: 0, collapsed: waiting !== undefined };
      } catch (err: unknown) {
        const stale = err instanceof UpstreamError ? entries.peek(key) : undefined;
        const age = stale ? now().getTime() - stale.loadedAt : Infinity;
        if (stale && age <= staleMs) {
          return {
            answer: forSite(stale.stored, site),
            status: 'stale',
            ageSeconds: Math.floor(age / 1000),
            collapsed: waiting !== undefined,
          };
        }
        throw err;
      }
    },
  };
}
