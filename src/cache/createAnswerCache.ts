import { LRUCache } from 'lru-cache';
import { successBody } from '../envelope.js';
import { UpstreamError } from '../errors.js';
import { strongEtag } from './cacheFields.js';

/** A serialized success answer, ready to send, with its strong validator. */
export interface CachedAnswer {
  readonly body: string;
  readonly etag: string;
}

/** hit: fresh from the cache; miss: loaded from the platform now; stale: the platform failed, an older answer stands in. */
export type CacheStatus = 'hit' | 'miss' | 'stale';

/** `collapsed`: this request waited for an identical request's platform call instead of making its own. */
export interface CacheResult {
  readonly answer: CachedAnswer;
  readonly status: CacheStatus;
  readonly ageSeconds?: number;
  readonly collapsed?: boolean;
}

export interface AnswerCache {
  /**
   * The answer for `key`, loaded once however many callers wait; `site` is echoed as this caller typed it.
   * A fresh answer is given at once, without a promise.
   */
  get(key: string, load: () => Promise<unknown>, site?: string): CacheResult | Promise<CacheResult>;
  readonly ttlSeconds: number;
}

export interface AnswerCacheOptions {
  /** How long an answer is served without asking the platform; 0 turns the cache off. */
  readonly ttlSeconds: number;
  /** Bytes of keys plus bodies (default 64 MiB), beside at most 10 000 entries. */
  readonly maxBytes?: number;
  readonly now?: () => Date;
}

/**
 * Stale-if-error: when the platform fails (UpstreamError), an answer loaded at most this long ago
 * stands in for the 502/504. Five minutes rides out a platform restart; nobody acts on older rankings.
 */
const STALE_MS = 300_000;

/** A serialized answer as stored, and the `site` its body echoes (none for a payload without one). */
type StoredAnswer = CachedAnswer & { readonly site?: string };

const ENTRY_OVERHEAD_BYTES = 128;

export function serializeAnswer(payload: unknown): StoredAnswer {
  const body = JSON.stringify(successBody(payload));
  const site: unknown = (payload as { site?: unknown } | null)?.site;
  return typeof site === 'string' ? { body, etag: strongEtag(body), site } : { body, etag: strongEtag(body) };
}

/** The stored answer with `site` echoed as this request typed it (another spelling of the same site). */
export function forSite(stored: StoredAnswer, site: string | undefined): CachedAnswer {
  if (site === undefined || stored.site === undefined || site === stored.site) return stored;
  const envelope = JSON.parse(stored.body) as { data: { site: string } };
  envelope.data.site = site;
  const body = JSON.stringify(envelope);
  return { body, etag: strongEtag(body) };
}

/**
 * The brief cache in front of the platform. Keys lead with the organization (cacheKeyFor), so no
 * entry or load is shared across organizations. Identical requests arriving during a load wait for
 * it; only successful answers are stored, and a failed load rejects every waiter.
 */
export function createAnswerCache(options: AnswerCacheOptions): AnswerCache {
  if (options.ttlSeconds <= 0) {
    return {
      ttlSeconds: 0,
      get: async (_key, load, site) => ({ answer: forSite(serializeAnswer(await load()), site), status: 'miss' }),
    };
  }
  const ttlMs = options.ttlSeconds * 1000;
  const now = options.now ?? (() => new Date());
  // `loadedAt`: when the platform answered (ms since the epoch).
  const entries = new LRUCache<string, { readonly stored: StoredAnswer; readonly loadedAt: number }>({
    max: 10_000,
    maxSize: options.maxBytes ?? 64 * 1024 * 1024,
    sizeCalculation: (entry, key) =>
      Buffer.byteLength(entry.stored.body) + entry.stored.etag.length + key.length * 2 + ENTRY_OVERHEAD_BYTES,
  });
  const loads = new Map<string, Promise<StoredAnswer>>();

  const startLoad = (key: string, load: () => Promise<unknown>): Promise<StoredAnswer> => {
    // Only get() starts a load, and never while one for the key is under way: the one settling is the one listed.
    const loading = load()
      .then((payload) => {
        const stored = serializeAnswer(payload);
        entries.set(key, { stored, loadedAt: now().getTime() });
        return stored;
      })
      .finally(() => loads.delete(key));
    loads.set(key, loading);
    return loading;
  };

  return {
    ttlSeconds: options.ttlSeconds,
    get(key, load, site) {
      const kept = entries.get(key);
      if (kept) {
        const age = now().getTime() - kept.loadedAt;
        if (age < ttlMs)
          return { answer: forSite(kept.stored, site), status: 'hit', ageSeconds: Math.floor(age / 1000) };
        if (age > STALE_MS) entries.delete(key); // too old even to stand in for a failure
      }
      return loaded(key, load, site);
    },
  };

  /** The answer from the platform (or one load under way), else a stale one for its failure. */
  async function loaded(key: string, load: () => Promise<unknown>, site: string | undefined): Promise<CacheResult> {
    const waiting = loads.get(key);
    const collapsed = waiting !== undefined;
    try {
      const stored = await (waiting ?? startLoad(key, load));
      return { answer: forSite(stored, site), status: 'miss', ageSeconds: 0, collapsed };
    } catch (err: unknown) {
      const stale = err instanceof UpstreamError ? entries.peek(key) : undefined;
      const age = stale ? now().getTime() - stale.loadedAt : Infinity;
      if (stale && age <= STALE_MS) {
        return {
          answer: forSite(stale.stored, site),
          status: 'stale',
          ageSeconds: Math.floor(age / 1000),
          collapsed,
        };
      }
      throw err;
    }
  }
}
