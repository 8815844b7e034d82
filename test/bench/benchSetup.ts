import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { KeywordsDocument } from '../../src/generated/graphql.js';
import { type RedisServer, redisServerInstalled, startRedisServer } from '../support/redisServer.js';
import { type BenchChild, startBenchChild, startUpstreams } from './benchChild.js';
import { START_V8_FLAGS } from './buildSettings.js';
import type { BareServersReady, GatewayReady, PlatformCall, UpstreamsReady } from './childMessages.js';
import { buildGateway } from './compiledGateway.js';
import { get } from './httpCalls.js';
import { sofaPath } from './sofaServer.js';

/**
 * Everything the bench measures, started on 127.0.0.1 in processes of their own:
 * the local upstreams, four gateways run as npm start runs them, esbuild's output on
 * plain node (the production default; the same with quiet logs; one without a cache
 * for cold calls; one with its limiter on a private redis-server), the production
 * default through tsx for context, the two bare servers serving the gateway's own
 * keywords bytes, and the bare proxy making the gateway's own platform call.
 */

/** The warm call: one URL, requested again and again (a cache hit after the first). */
export const WARM_PATH = '/v1/api/keywords?site=acme.com&limit=5';
/** What the gateway sends the platform for WARM_PATH (one call: five ranked keywords fill the answer). */
export const WARM_VARIABLES = { organizationId: 'org_demo', site: 'acme.com', rankedFirst: 5, unrankedFirst: 5 };

/**
 * The limiter stays on in every gateway, with an allowance the bench cannot exhaust
 * (the highest RATE_LIMIT_REQUESTS config accepts), so it is measured but never refuses.
 */
export const BENCH_RATE_LIMIT = { requests: '1000000', windowSeconds: '60' };

export interface BenchSetupOptions {
  readonly workDir: string;
  /** node flags for every gateway process and the bare servers (e.g. --cpu-prof). */
  readonly profileFlags: readonly string[];
  /** Skip the Redis gateway even when redis-server is installed. */
  readonly withoutRedis: boolean;
  /** The repository root: the gateways are built under its bench-results/build (gitignored). */
  readonly repo: string;
  /** Skip the production default run through tsx. */
  readonly withoutTsx: boolean;
  readonly log: (line: string) => void;
}

export interface BenchSetup {
  readonly upstreams: BenchChild<UpstreamsReady>;
  /** Production default: cache on (30 s), local limiter, LOG_LEVEL=info; esbuild's output on plain node, as npm start runs it. */
  readonly gateway: BenchChild<GatewayReady>;
  /** The same with LOG_LEVEL=warn: what the per-request log line costs. */
  readonly gatewayWarnLogs: BenchChild<GatewayReady>;
  /**
   * The production default with tracing on, every request sampled, spans posted over OTLP
   * to the bench's upstream process (which refuses them): what making and sending spans costs.
   */
  readonly gatewayTraced: BenchChild<GatewayReady>;
  /**
   * The production default built with the tracing helpers compiled out (noTracingSpans.ts):
   * what the default gateway, whose tracing is off, pays for the hooks.
   */
  readonly gatewayUntraced: BenchChild<GatewayReady>;
  /** CACHE_TTL_SECONDS=0: every request is a platform call (cold). */
  readonly gatewayCold: BenchChild<GatewayReady>;
  /** Limiter on the bench's own redis-server; null when redis-server is missing. */
  readonly gatewayRedis: BenchChild<GatewayReady> | null;
  /** The production default run from its TypeScript through tsx (how npm start ran before); null when skipped. */
  readonly gatewayTsx: BenchChild<GatewayReady> | null;
  readonly bare: BenchChild<BareServersReady>;
  readonly redis: RedisServer | null;
  readonly authHeaders: Record<string, string>;
  /** The direct platform call of WARM_PATH's data: same operation, variables and headers as the gateway's. */
  readonly platformCall: PlatformCall;
  readonly warmBody: string;
  readonly gatewayLog: string;
  /** Stops everything started so far (also after a failed start). */
  close(): Promise<void>;
}

export async function startBench(options: BenchSetupOptions): Promise<BenchSetup> {
  const { workDir, log } = options;
  const started: Array<{ stop(): Promise<void> }> = [];
  const openFds: number[] = [];
  let closing: Promise<void> | null = null;
  const close = () => {
    closing ??= (async () => {
      // Last started, first stopped: the gateways go before the upstreams they follow.
      for (const item of [...started].reverse()) await item.stop().catch(() => undefined);
      for (const fd of openFds.splice(0)) closeSync(fd);
    })();
    return closing;
  };
  try {
    // First, so a failed build starts nothing.
    log('building the gateway with esbuild, as npm run build does…');
    const compiledGateway = await buildGateway(options.repo, join(options.repo, 'bench-results', 'build'));
    const untracedGateway = await buildGateway(options.repo, join(options.repo, 'bench-results', 'build-untraced'), {
      tracing: 'compiled-out',
    });
    const dataDir = join(workDir, 'data');
    mkdirSync(dataDir, { recursive: true });
    log('starting the local platform and key service…');
    const upstreams = await startUpstreams(dataDir);
    started.push(upstreams);

    let redis: RedisServer | null = null;
    if (options.withoutRedis) {
      log('!!! --no-redis: the Redis limiter row is SKIPPED');
    } else if (!redisServerInstalled()) {
      log('!!! redis-server is not installed: the Redis limiter row is SKIPPED');
    } else {
      redis = await startRedisServer();
      started.push(redis);
      log(`started a private redis-server on port ${redis.port}`);
    }

    const gatewayEnv = (extra: Record<string, string>): Record<string, string> => ({
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      RATE_LIMIT_REQUESTS: BENCH_RATE_LIMIT.requests,
      RATE_LIMIT_WINDOW_SECONDS: BENCH_RATE_LIMIT.windowSeconds,
      PLATFORM_GRAPHQL_URL: upstreams.ready.platform.url,
      PLATFORM_TOKEN: upstreams.ready.platform.token,
      KEY_SERVICE_URL: upstreams.ready.keyService.url,
      KEY_SERVICE_TOKEN: upstreams.ready.keyService.token,
      LOCAL_DATA_DIR: dataDir,
      ...extra,
    });
    const startGateway = async (
      name: string,
      extra: Record<string, string>,
      runtime: 'node' | 'tsx' = 'node',
      compiled = compiledGateway,
    ) => {
      log(`starting gateway "${name}"…`);
      const logFile = join(workDir, `${name}.log`);
      const fd = openSync(logFile, 'a');
      openFds.push(fd);
      const child = await startBenchChild<GatewayReady>({
        name,
        module: runtime === 'node' ? compiled : './gatewayProcess.ts',
        runtime,
        env: gatewayEnv(extra),
        stdout: fd,
        // As npm start runs it; the run through tsx shows how npm start ran before, without them.
        nodeFlags: [...options.profileFlags, ...(runtime === 'node' ? START_V8_FLAGS : [])],
      });
      started.push(child);
      return { child, logFile };
    };
    const main = await startGateway('gateway', {});
    const warnLogs = await startGateway('gateway-warn-logs', { LOG_LEVEL: 'warn' });
    const traced = await startGateway('gateway-traced', {
      OTEL_EXPORTER_OTLP_ENDPOINT: new URL(upstreams.ready.platform.url).origin,
      OTEL_TRACES_SAMPLER: 'always_on',
    });
    const untraced = await startGateway('gateway-untraced', {}, 'node', untracedGateway);
    const cold = await startGateway('gateway-no-cache', { CACHE_TTL_SECONDS: '0' });
    const withRedis = redis ? await startGateway('gateway-redis', { REDIS_URL: redis.url }) : null;
    const throughTsx = options.withoutTsx ? null : await startGateway('gateway-tsx', {}, 'tsx');

    const authHeaders = { authorization: `Bearer ${upstreams.ready.demoKey}` };
    const first = await get(`${main.child.ready.url}${WARM_PATH}`, authHeaders);
    if (first.status !== 200)
      throw new Error(`the gateway answered ${first.status} to ${WARM_PATH}: ${first.body.slice(0, 300)}`);
    const contentType = String(first.headers['content-type'] ?? '');

    const platformCall: PlatformCall = {
      url: upstreams.ready.platform.url,
      // What the platform client sends for the gateway: the printed document, variables, operation name.
      headers: {
        authorization: `Bearer ${upstreams.ready.platform.token}`,
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
      },
      body: JSON.stringify({
        query: KeywordsDocument.toString(),
        variables: WARM_VARIABLES,
        operationName: 'Keywords',
      }),
    };

    // The proxies make the very call the direct platform row makes, so they start with it.
    log('starting the bare node:http and Koa servers with the same bytes, and the bare and stack proxies…');
    const bare = await startBenchChild<BareServersReady>({
      name: 'bare servers',
      module: './bareServersProcess.ts',
      env: {},
      stdout: 'ignore',
      nodeFlags: options.profileFlags,
      firstMessage: { type: 'serve', body: first.body, contentType, platformCall },
    });
    started.push(bare);
    for (const url of [bare.ready.nodeUrl, bare.ready.koaUrl]) {
      const answer = await get(`${url}${WARM_PATH}`);
      if (answer.body !== first.body || answer.headers['content-type'] !== contentType) {
        throw new Error(`${url} does not serve the gateway's bytes and content type`);
      }
    }
    for (const [name, url] of [
      ['bare proxy', bare.ready.proxyUrl],
      ['stack proxy', bare.ready.stackProxyUrl],
    ]) {
      const proxied = await get(`${url}${WARM_PATH}`);
      if (proxied.status !== 200 || !proxied.body.includes('"data"')) {
        throw new Error(`the ${name} answered ${proxied.status}: ${proxied.body.slice(0, 300)}`);
      }
    }
    const sofa = await get(`${bare.ready.sofaUrl}${sofaPath(WARM_VARIABLES.organizationId)}`);
    if (sofa.status !== 200 || !sofa.body.includes('"trackedKeywords"')) {
      throw new Error(`SOFA answered ${sofa.status}: ${sofa.body.slice(0, 300)}`);
    }

    return {
      upstreams,
      gateway: main.child,
      gatewayWarnLogs: warnLogs.child,
      gatewayTraced: traced.child,
      gatewayUntraced: untraced.child,
      gatewayCold: cold.child,
      gatewayRedis: withRedis?.child ?? null,
      gatewayTsx: throughTsx?.child ?? null,
      bare,
      redis,
      authHeaders,
      platformCall,
      warmBody: first.body,
      gatewayLog: main.logFile,
      close,
    };
  } catch (err: unknown) {
    await close();
    throw err;
  }
}
