import type { Logger } from 'pino';
import type { Authenticator } from './auth/principal.js';
import type { AnswerCache } from './cache/answerCache.js';
import type { RequestLimiter } from './limits/requestLimiter.js';
import type { PlatformClient } from './platform/platformClient.js';
import type { UsageRecorder } from './usage/usageRecorder.js';

/**
 * Everything a request may need, built once in main.ts (or by a test, with fakes)
 * and handed to createApp. No middleware constructs its own dependencies.
 */
export interface Services {
  readonly logger: Logger;
  readonly now: () => Date;
  readonly authenticator: Authenticator;
  readonly limiter: RequestLimiter;
  readonly cache: AnswerCache;
  readonly usage: UsageRecorder;
  readonly platform: PlatformClient;
}
