import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { createApp } from './app.js';
import { createKeyAuthenticator } from './auth/keyAuthenticator.js';
import { gateVerifications } from './auth/verificationGate.js';
import { createAnswerCache } from './cache/createAnswerCache.js';
import type { Config, UpstreamTarget } from './config.js';
import { createHttpServer } from './http/createHttpServer.js';
import { createReadiness } from './http/readiness.js';
import { keyServiceProbe, platformProbe } from './http/readinessProbes.js';
import { createRequestLimiter } from './limits/createRequestLimiter.js';
import type { LocalUpstreams } from './local/startLocalUpstreams.js';
import { createGatewayMetrics } from './metrics/gatewayMetrics.js';
import { createPlatformClient } from './platform/platformClient.js';
import { tracedPlatform } from './telemetry/tracedPlatform.js';
import { createKeyServiceClient } from './upstream/keyServiceClient.js';
import { createUsageBuffer } from './usage/createUsageBuffer.js';

export interface RunningGateway {
  /** Where the gateway answers, e.g. http://127.0.0.1:3000. */
  readonly url: string;
  readonly server: Server;
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

  const platform = tracedPlatform(createPlatformClient({ ...upstreams.platform, timeoutMs, onCall: metrics.platformCall }));
  const keyService = createKeyServiceClient({ ...upstreams.keyService, timeoutMs, onCall: metrics.keyServiceCall });
  const usage = createUsageBuffer({
    sink: keyService,
    logger,
    onFlushed: metrics.usageFlushed,
    onFlushFailed: metrics.usageFlushFailed,
  });
  metrics.observeUsagePending(() => usage.pendingTotal());
  const authenticator = createKeyAuthenticator({
    keyService: { verify: gateVerifications(keyService.verify), followEvents: keyService.followEvents },
    // The ceiling check adds this instance's calls not yet reported to the key service.
    pendingUsage: (organizationId) => usage.pending(organizationId),
    now,
    logger,
  });
  authenticator.start();
  const limiter = await createRequestLimiter({ ...config.rateLimit, redisUrl: config.redisUrl, logger, now });
  metrics.observeLimiterAvailability(() => limiter.available());
  const cache = createAnswerCache({ ttlSeconds: config.cacheTtlSeconds, now });

  const readiness = createReadiness(
    {
      platform: platformProbe(platform),
      keyService: keyServiceProbe({ ...upstreams.keyService, timeoutMs, onCall: metrics.keyServiceCall }),
      ...(config.redisUrl ? { redis: () => limiter.available() } : {}),
    },
    { logger },
  );

  const app = createApp({ logger, now, authenticator, limiter, cache, usage, platform, metrics, readiness });
  const server = createHttpServer(app, { logger, metrics, keepAliveTimeoutMs: config.keepAliveTimeoutMs });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (err: unknown) => {
    await Promise.allSettled([usage.close(0), limiter.close(), authenticator.close(), local?.close()]);
    throw err;
  });

  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`,
    server,
    local,
    closers: [
      (remainingMs) => usage.close(remainingMs),
      () => limiter.close(),
      () => authenticator.close(),
      async () => local?.close(),
    ],
  };
}
