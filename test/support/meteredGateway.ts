import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator, type KeyAuthenticatorCacheOptions } from '../../src/auth/keyAuthenticator.js';
import type { RedisTarget } from '../../src/config.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis } from '../../src/redis/connectRedis.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { createUsageBuffer } from '../../src/usage/createUsageBuffer.js';
import type { UsageRecorder } from '../../src/usage/usageRecorder.js';
import type { FakeKeyService } from './fakeKeyService.js';
import { FIXED_NOW, fakeServices, PLATFORM_URL } from './fakeServices.js';
import { listen } from './http.js';
import { keywordsData } from './platformAnswers.js';

/**
 * One gateway instance as gateway.ts wires it for metering (key service client, event
 * stream, ledger, usage buffer, authenticator), served over real HTTP; the platform
 * is nock'd and always answers. With `redis`, its ledger is the one shared through
 * that Redis, on a connection of its own as a separate process would have.
 */
export interface MeteredGateway {
  readonly url: string;
  readonly usage: UsageRecorder;
  close(): Promise<void>;
}

export interface MeteredGatewayOptions {
  readonly flushIntervalMs?: number;
  readonly cache?: Partial<KeyAuthenticatorCacheOptions>;
  /** The event stream's liveness window. */
  readonly idleTimeoutMs?: number;
  readonly redis?: RedisTarget;
  /** The authenticator's clock: FIXED_NOW unless given. */
  readonly now?: () => Date;
}

export function answerEveryPlatformCall(): void {
  const platform = new URL(PLATFORM_URL);
  nock(platform.origin).persist().post(platform.pathname).reply(200, { data: keywordsData() });
}

export async function startMeteredGateway(
  keyService: FakeKeyService,
  options: MeteredGatewayOptions = {},
): Promise<MeteredGateway> {
  const logger = pino({ level: 'silent' });
  const client = createKeyServiceClient({
    url: keyService.url,
    token: keyService.token,
    timeoutMs: 2000,
    events: { reconnectDelayMs: 10, maxReconnectDelayMs: 40, idleTimeoutMs: options.idleTimeoutMs ?? 60_000 },
  });
  const redis = options.redis ? connectRedis(options.redis, logger) : null;
  if (redis) await new Promise((resolve) => redis.once('ready', resolve));
  // An allowance no test reaches: these gateways are about the ceiling.
  const rateLimit = { requests: 1_000_000, windowSeconds: 60 };
  const admission = redis ? createRedisAdmission({ ...rateLimit, redis, logger }) : createLocalAdmission(rateLimit);
  const { ledger } = admission;
  const usage = createUsageBuffer({
    sink: client,
    logger,
    ledger,
    flushIntervalMs: options.flushIntervalMs ?? 20,
    retryBaseMs: 5,
  });
  const now = options.now ?? (() => FIXED_NOW);
  const authenticator = createKeyAuthenticator({
    keyService: client,
    ledger,
    now,
    logger,
    ...(options.cache ? { cache: options.cache } : {}),
  });
  authenticator.start();
  const server = await listen(createApp(fakeServices({ authenticator, admission, usage, now })));
  return {
    url: server.url,
    usage,
    async close() {
      await server.close();
      await usage.close(2000);
      await admission.close();
      await authenticator.close();
      if (redis) closeRedis(redis);
    },
  };
}

/** Statuses of `total` GETs of the keywords route with `key`, at most `concurrency` at once. */
export async function statusesOf(url: string, key: string, total: number, concurrency: number): Promise<number[]> {
  const statuses: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < total) {
      next += 1;
      const res = await fetch(`${url}/v1/api/keywords?site=example.com`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await res.json()) as { errors: Array<{ reason?: string }> };
      statuses.push(res.status === 403 && body.errors[0]?.reason === 'usage_ceiling_reached' ? 403 : res.status);
    }
  };
  await Promise.all(Array.from({ length: Math.min(total, concurrency) }, worker));
  return statuses;
}

export function countOf(statuses: readonly number[], status: number): number {
  return statuses.filter((s) => s === status).length;
}
