import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createAdminApp, createApp } from './app.js';
import { withFailedKeyBudget } from './auth/failedKeyBudget.js';
import { createKeyAuthenticator } from './auth/keyAuthenticator.js';
import { createVerificationGate } from './auth/verificationGate.js';
import { createAnswerCache } from './cache/createAnswerCache.js';
import type { Config } from './config.js';
import { createHttpServer } from './http/createHttpServer.js';
import { checkCanListen, listenOn } from './http/listenOn.js';
import { createReadiness, platformProbe, type Readiness } from './http/readiness.js';
import { REFUSAL_DELAY_MS } from './http/refusalDelay.js';
import { createLocalAdmission } from './limits/localAdmission.js';
import type { LocalUpstreams } from './local/startLocalUpstreams.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { createPlatformClient } from './platform/platformClient.js';
import { createKeyServiceClient } from './upstream/keyServiceClient.js';
import { createUsageBuffer } from './usage/createUsageBuffer.js';
import { createUsageSpool } from './usage/usageSpool.js';

export interface RunningGateway {
  /** Where the gateway answers, e.g. http://127.0.0.1:3000; `adminUrl`: health, metrics and readiness, if apart. */
  readonly url: string;
  readonly adminUrl: string | null;
  readonly server: Server;
  /** Serving once listening; main.ts marks it draining at the shutdown signal. */
  readonly readiness: Readiness;
  /** The embedded platform and key service, when no upstreams are configured. */
  readonly local: LocalUpstreams | null;
  /** Run in order once the server takes no more requests, each told the milliseconds left. */
  readonly closers: ReadonlyArray<(remainingMs: number) => Promise<void>>;
}

/**
 * Builds every service once, hands them to createApp and listens. With no upstreams configured, the
 * embedded local platform and key service start first, reached over real HTTP as the real ones are.
 */
export async function startGateway(config: Config, logger: Logger): Promise<RunningGateway> {
  await checkCanListen(config.host, config.adminPort === null ? [config.port] : [config.port, config.adminPort]);
  let local: LocalUpstreams | null = null;
  let upstreams = config.upstreams;
  if (upstreams === null) {
    // Loaded only when used: a gateway with real upstreams never carries the local ones.
    const { startLocalUpstreams } = await import('./local/startLocalUpstreams.js');
    local = await startLocalUpstreams({ dataDir: config.localDataDir });
    upstreams = local;
  }
  const now = () => new Date();
  const timeoutMs = config.upstreamTimeoutMs;
  const metrics = createGatewayMetrics({ processMetrics: true });
  const platform = createPlatformClient({ ...upstreams.platform, timeoutMs, onCall: metrics.platformCall });
  const keyService = createKeyServiceClient({ ...upstreams.keyService, timeoutMs, onCall: metrics.keyServiceCall });
  // ioredis is loaded only when there is a Redis to talk to: it costs memory a local gateway never needs.
  const redisModule = config.redis ? await import('./redis/connectRedis.js') : null;
  const redis = config.redis ? redisModule?.connectRedis(config.redis, logger) : undefined;
  // With Redis every instance admits against one shared count per organization; without, against its own.
  const admission = redis
    ? (await import('./limits/redisAdmission.js')).createRedisAdmission({ ...config.rateLimit, redis, logger })
    : createLocalAdmission(config.rateLimit);
  // With Redis, each held call also has a copy in one shared stream, which another instance delivers should this one die.
  const queue = redis
    ? (await import('./usage/redisUsageQueue.js')).redisUsageQueue({
        stream: (await import('./usage/usageStream.js')).createUsageStream({ redis }),
        logger,
      })
    : undefined;
  const usage = createUsageBuffer({
    sink: keyService,
    logger,
    ledger: admission.ledger,
    spool: createUsageSpool(config.usageSpoolDir),
    onFlushed: metrics.usageFlushed,
    onFlushFailed: metrics.usageFlushFailed,
    queue,
  });
  metrics.observeUsagePending(() => usage.pendingTotal());
  // With Redis, a key any instance saw succeed is known to all: a new instance serves its tenants in the top lane.
  const knownKeys = redis ? (await import('./auth/knownKeys.js')).redisKnownKeys(redis, logger) : undefined;
  // A waiter is let in while the line ahead clears within an upstream call's own deadline.
  const verifications = createVerificationGate(keyService.verify, { knownKeys, maxWaitMs: timeoutMs });
  const keyAuthenticator = createKeyAuthenticator({
    keyService: { verify: verifications.verify, followEvents: keyService.followEvents },
    // Read before each verify: which of the gateway's calls its `used` surely includes.
    ledger: admission.ledger,
    now,
    logger,
  });
  keyAuthenticator.start();
  const authenticator = withFailedKeyBudget(keyAuthenticator, {
    perMinute: config.unknownKeysPerMinute,
    hasSucceeded: verifications.hasSucceeded,
    isKnown: verifications.isKnown,
    now,
  });
  // What an earlier instance could not deliver goes out with this one's first batch.
  usage.deliverSpooled().catch((err: unknown) => logger.error({ err }, 'usage spool could not be read'));
  metrics.observeLimiterAvailability(() => admission.available());
  metrics.observeOrganizationsTracked(admission.trackedOrganizations);
  const readiness = createReadiness(
    {
      platform: platformProbe(platform),
      keyService: () => keyService.isReady(), // verify answered with our token
      ...(redis ? { redis: () => admission.available() } : {}),
    },
    { logger },
  );
  metrics.observeDependencies(readiness.dependencies);

  const app = createApp({
    logger,
    now,
    authenticator,
    admission,
    cache: createAnswerCache({ ttlSeconds: config.cacheTtlSeconds, maxBytes: config.cacheMaxMb * 1024 * 1024, now }),
    usage,
    platform,
    metrics,
    readiness,
    publicBaseUrl: config.publicBaseUrl ?? undefined,
    trustedProxyHops: config.trustedProxyHops,
    watchOnAdminPort: config.adminPort !== null,
    refusalDelayMs: REFUSAL_DELAY_MS,
  });
  const server = createHttpServer(app, {
    logger,
    metrics,
    maxConnections: config.maxConnections,
    maxConnectionsPerClient: config.maxConnectionsPerClient,
    trustedProxyHops: config.trustedProxyHops,
    keepAliveTimeoutMs: config.keepAliveTimeoutMs,
  });
  const admin =
    config.adminPort !== null
      ? createHttpServer(createAdminApp({ logger, metrics, readiness }), { logger, metrics })
      : null;
  const closers: RunningGateway['closers'] = [
    (remainingMs) => usage.close(remainingMs),
    // After the usage: its last acknowledgements reach the shared count, then unused places go back.
    () => admission.close(),
    async () => redis && redisModule?.closeRedis(redis),
    () => keyAuthenticator.close(),
    async () => local?.close(),
    // Last: readiness stays observable while the rest drains.
    async () => {
      admin?.closeAllConnections();
      await new Promise<void>((resolve) => (admin?.listening ? admin.close(() => resolve()) : resolve()));
    },
  ];
  let url: string;
  let adminUrl: string | null = null;
  try {
    url = await listenOn(server, config.host, config.port);
    if (admin && config.adminPort !== null) adminUrl = await listenOn(admin, config.host, config.adminPort);
  } catch (err: unknown) {
    server.close();
    for (const close of closers) await close(0).catch(() => {});
    throw err;
  }
  readiness.serving();
  return { url, adminUrl, server, readiness, local, closers };
}
