/** A serialized success answer, ready to send, with its strong validator. */
export interface CachedAnswer {
  readonly body: string;
  readonly etag: string;
}

/** hit: fresh from the cache; miss: loaded from the platform now; stale: the platform failed, an older answer stands in. */
export type CacheStatus = 'hit' | 'miss' | 'stale';

export interface CacheResult {
  readonly answer: CachedAnswer;
  readonly status: CacheStatus;
  /** Whole seconds since the answer was loaded from the platform (0 when loaded for this request). */
  readonly ageSeconds?: number;
  /** True when this request waited for an identical request's platform call instead of making its own. */
  readonly collapsed?: boolean;
}

export interface AnswerCache {
  /**
   * The answer for `key`, loading (once, however many callers wait) when absent. `site`
   * is the site as this caller typed it: the answer echoes it in `data.site`, whichever
   * spelling of the same site (cacheKeyFor) loaded the entry.
   */
  get(key: string, load: () => Promise<unknown>, site?: string): Promise<CacheResult>;
  readonly ttlSeconds: number;
}
