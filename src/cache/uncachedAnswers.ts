import type { AnswerCache } from './answerCache.js';
import { answerFor, serializeAnswer } from './serializeAnswer.js';

/** CACHE_TTL_SECONDS=0: every request loads afresh; nothing is kept. */
export function uncachedAnswers(): AnswerCache {
  return {
    ttlSeconds: 0,
    async get(_key, load, site) {
      return { answer: answerFor(serializeAnswer(await load()), site), status: 'miss', ageSeconds: 0 };
    },
  };
}
