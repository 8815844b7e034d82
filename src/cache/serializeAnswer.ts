import { createHash } from 'node:crypto';
import { successBody } from '../envelope.js';
import type { CachedAnswer } from './answerCache.js';

/** Serializes a payload into its success envelope once, with a strong ETag over the bytes. */
export function serializeAnswer(payload: unknown): CachedAnswer {
  const body = JSON.stringify(successBody(payload));
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, etag };
}
