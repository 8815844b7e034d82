import { successBody } from '../envelope.js';
import type { CachedAnswer } from './answerCache.js';
import { strongEtag } from './cacheFields.js';

/** Serializes a payload into its success envelope once, with a strong ETag over the bytes. */
export function serializeAnswer(payload: unknown): CachedAnswer {
  const body = JSON.stringify(successBody(payload));
  return { body, etag: strongEtag(body) };
}
