/** A serialized success answer, ready to send, with its strong validator. */
export interface CachedAnswer {
  readonly body: string;
  readonly etag: string;
}

export type CacheStatus = 'hit' | 'miss' | 'stale';

export interface AnswerCache {
  /** The answer for `key`, loading (once, however many callers wait) when absent. */
  get(key: string, load: () => Promise<unknown>): Promise<{ answer: CachedAnswer; status: CacheStatus }>;
  readonly ttlSeconds: number;
}
