import { successBody } from '../envelope.js';
import type { CachedAnswer } from './answerCache.js';
import { strongEtag } from './cacheFields.js';

/** A serialized success answer as stored, and the `site` its body echoes (none for a payload without one). */
export interface StoredAnswer extends CachedAnswer {
  readonly site?: string;
}

/** Serializes a payload into its success envelope once, tagged over its bytes. */
export function serializeAnswer(payload: unknown): StoredAnswer {
  const body = JSON.stringify(successBody(payload));
  const site: unknown = (payload as { site?: unknown } | null)?.site;
  return typeof site === 'string' ? { body, etag: strongEtag(body), site } : { body, etag: strongEtag(body) };
}

/**
 * The answer for a request that typed `site`: the stored one when it typed the same (or
 * the payload echoes no site), else the same answer with its own spelling echoed.
 */
export function forSite(stored: StoredAnswer, site: string | undefined): CachedAnswer {
  if (site === undefined || stored.site === undefined || site === stored.site) return stored;
  const envelope = JSON.parse(stored.body) as { data: { site: string } };
  envelope.data.site = site;
  const body = JSON.stringify(envelope);
  return { body, etag: strongEtag(body) };
}
