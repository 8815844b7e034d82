import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createAdminApp, createApp } from './app.js';
import { createKeyAuthenticator } from './auth/keyAuthenticator.js';
import { withFailedKeyBudget } from './auth/failedKeyBudget.js';
import { createVerificationGate } from './auth/verificationGate.js';
import { createAnswerCache } from './cache/createAnswerCache.js';
import type { Config, UpstreamTarget } from './config.js';
import { createHttpServer } from './http/createHttpServer.js';
import { REFUSAL_DELAY_MS } from './http/refusalDelay.js';
import { createReadiness } from './http/readiness.js';
import { keyServiceProbe, platformProbe } from './http/readinessProbes.js';
import { createRequestLimiter } from './limits/createRequestLimiter.js';
import type { LocalUpstreams } from './local/startLocalUpstreams.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { createPlatformClient } from './platform/platformClient.js';
import { createKeyServiceClient } from './upstream/keyServiceClient.js';
import { createUsageBuffer } from './usage/createUsageBuffer.js';

export interface RunningGateway {
  /** Where the gateway answers, e.g. http://127.0.0.1:3000. */
  readonly url: string;
  readonly server: Server;
  /** Where health, metrics and readiness answer when ADMIN_PORT is set; null: on `url`. */
  readonly adminUrl: string | null;
  /** The embedded platform and key service, when no upstreams are configured. */
  readonly local: LocalUpstreams | null;
  /**
   * Closes in order, once the server no longer takes requests: usage flushed first
   * (nothing counted is lost), then the limiter, the event stream, the local upstreams.
   * Each step is told the milliseconds left.
   */
  readonly closers: ReadonlyArray<(remainingMs: number) => Promise<void>>;
}

/**
 * Builds every service once, hands them to createApp and listens. With no upstreams
 * configured, the embedded local platform and key service are started first and the
 * gateway talks to them over real HTTP, exactly as it would to the real ones.
 */
export async function startGateway(config: Config, logger: Logger): Promise<RunningGateway> {
  let local: LocalUpstreams | null = null;
  let upstreams: { platform: UpstreamTarget; keyService: UpstreamTarget } | null = config.upstreams;
  if (upstreams === null) {
    // Loaded only when used: a gateway with real upstreams never carries the local ones.
    const { startLocalUpstreams } = await import('./local/startLocalUpstreams.js');
    local = await startLocalUpstreams({ dataDir: config.localDataDir });
    upstreams = { platform: local.platform, keyService: local.keyService };
  }
  const now = () => new Date();
  const timeoutMs = config.upstreamTimeoutMs;
  const metrics = createGatewayMetrics({ processMetrics: true });

  const platform = createPlatformClient({ ...upstreams.platform, timeoutMs, onCall: metrics.platformCall });
  const keyService = createKeyServiceClient({ ...upstreams.keyService, timeoutMs, onCall: metrics.keyServiceCall });
  const usage = createUsageBuffer({
    sink: keyService,
    logger,
    onFlushed: metrics.usageFlushed,
    onFlushFailed: metrics.usageFlushFailed,
  });
  metrics.observeUsagePending(() => usage.pendingTotal());
  const verifications = createVerificationGate(keyService.verify);
  const keyAuthenticator = createKeyAuthenticator({
    keyService: { verify: (keyHash) => verifications.verify(keyHash), followEvents: keyService.followEvents },
    // The ceiling check adds this instance's calls not yet reported to the key service.
    pendingUsage: (organizationId) => usage.pending(organizationId),
    now,
    logger,
  });
  keyAuthenticator.start();
  const authenticator = withFailedKeyBudget(keyAuthenticator, {
    perMinute: config.unknownKeysPerMinute,
    hasSucceeded: verifications.hasSucceeded,
    now,
  });
  const limiter = await createRequestLimiter({ ...config.rateLimit, redisUrl: config.redisUrl, logger, now });
  metrics.observeLimiterAvailability(() => limiter.available());
  const cache = createAnswerCache({ ttlSeconds: config.cacheTtlSeconds, maxBytes: config.cacheMaxMb * 1024 * 1024, now });

  const readiness = createReadiness({
    platform: platformProbe(platform),
    keyService: keyServiceProbe({ ...upstreams.keyService, timeoutMs, onCall: metrics.keyServiceCall }),
    ...(config.redisUrl ? { redis: () => limiter.available() } : {}),
  });

  const { trustedProxyHops } = config;
  const watchOnAdminPort = config.adminPort !== null;
  const app = createApp({
    logger,
    now,
    authenticator,
    limiter,
    cache,
    usage,
    platform,
    metrics,
    readiness,
    trustedProxyHops,
    watchOnAdminPort,
    refusalDelayMs: REFUSAL_DELAY_MS,
  });
  const server = createHttpServer(app, { logger, metrics, maxConnections: config.maxConnections });
  const admin = watchOnAdminPort ? createHttpServer(createAdminApp({ logger, metrics, readiness }), { logger, metrics }) : null;
  const closeAdmin = async () => {
    admin?.closeAllConnections();
    await new Promise<void>((resolve) => (admin?.listening ? admin.close(() => resolve()) : resolve()));
  };
  try {
    await listenOn(server, config.port, config.host);
    if (admin && config.adminPort !== null) await listenOn(admin, config.adminPort, config.host);
  } catch (err: unknown) {
    server.close();
    await Promise.allSettled([closeAdmin(), usage.close(0), limiter.close(), keyAuthenticator.close(), local?.close()]);
    throw err;
  }

  return {
    url: urlOf(server, config.host),
    adminUrl: admin ? urlOf(admin, config.host) : null,
    server,
    local,
    closers: [
      (remainingMs) => usage.close(remainingMs),
      () => limiter.close(),
      () => keyAuthenticator.close(),
      async () => local?.close(),
      closeAdmin, // last: readiness stays observable while the rest drains
    ],
  };
}

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function urlOf(server: Server, configuredHost: string): string {
  const { port } = server.address() as AddressInfo;
  const host = configuredHost.includes(':') ? `[${configuredHost}]` : configuredHost;
  return `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`;
}
