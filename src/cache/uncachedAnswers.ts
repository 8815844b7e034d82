import type { AnswerCache } from './answerCache.js';
import { serializeAnswer } from './serializeAnswer.js';

/** CACHE_TTL_SECONDS=0: every request loads afresh; nothing is kept. */
export function uncachedAnswers(): AnswerCache {
  return {
    ttlSeconds: 0,
    async get(_key, load) {
      return { answer: serializeAnswer(await load()), status: 'miss', ageSeconds: 0 };
    },
  };
}
