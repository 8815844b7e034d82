import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

/**
 * The only reader of process.env. Every variable is validated once at start;
 * a bad value stops the process with one clear line per problem.
 */

/** Every bound in one wording, so an operator always learns the allowed range and what was given. */
const integer = (name: string, fallback: number, min: number, max: number) =>
  z
    .string()
    .trim()
    .optional()
    .superRefine((value, ctx) => {
      if (value !== undefined && !(/^\d+$/.test(value) && Number(value) >= min && Number(value) <= max)) {
        ctx.addIssue({ code: 'custom', message: `${name} must be between ${min} and ${max} (got ${value})` });
      }
    })
    .transform((value) => (value === undefined ? fallback : Number(value)));

/**
 * Above the 60 s idle timeout of common load balancers: the balancer, not the gateway, must
 * close an idle connection first, or it may send a request on a socket being closed (a 502).
 */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Long enough for a load balancer to see /readyz fail (two checks a couple of seconds apart) before the listener closes. */
export const DEFAULT_SHUTDOWN_DELAY_SECONDS = 5;

/**
 * The one folder the gateway writes to unless told otherwise: `data/` in the application's own
 * folder (one above src/ or dist/), wherever the process was started from. The container image
 * makes it its only writable folder.
 */
export const DATA_DIR = join(fileURLToPath(new URL('..', import.meta.url)), 'data');

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const url = (name: string) =>
  z
    .string()
    .trim()
    .url(`${name} must be an absolute http(s) URL`)
    .refine((value) => /^https?:\/\//.test(value), `${name} must use http or https`)
    .optional();

const emptyAsUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

/** The OTLP encodings the gateway carries an exporter for (gRPC it does not). */
const otlpProtocol = (name: string) =>
  z.preprocess(
    emptyAsUndefined,
    z.enum(['http/protobuf', 'http/json'], { message: `${name} must be http/protobuf or http/json` }).optional(),
  );

/** A comma-separated list of host:port, e.g. `10.0.0.1:26379,10.0.0.2:26379`. */
const hostPortList = (name: string) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((item) => item.trim())
        .filter((item) => item !== ''),
    )
    .pipe(
      z
        .array(
          z
            .string()
            .regex(/^[^\s:,]+:\d{1,5}$/, `${name} must be a comma-separated list of host:port`)
            .transform((item) => {
              const at = item.lastIndexOf(':');
              return { host: item.slice(0, at), port: Number(item.slice(at + 1)) };
            })
            .refine((node) => node.port >= 1 && node.port <= 65535, `${name}: ports go from 1 to 65535`),
        )
        .min(1, `${name} must name at least one host:port`),
    )
    .optional();

export const EnvSchema = z.object({
  PORT: z.preprocess(emptyAsUndefined, integer('PORT', 3000, 0, 65535)),
  HOST: z.preprocess(emptyAsUndefined, z.string().trim().optional()).transform((v) => v ?? '127.0.0.1'),
  PLATFORM_GRAPHQL_URL: z.preprocess(emptyAsUndefined, url('PLATFORM_GRAPHQL_URL')),
  PLATFORM_TOKEN: z.preprocess(emptyAsUndefined, z.string().optional()),
  KEY_SERVICE_URL: z.preprocess(emptyAsUndefined, url('KEY_SERVICE_URL')),
  KEY_SERVICE_TOKEN: z.preprocess(emptyAsUndefined, z.string().optional()),
  // Below the platform's own 10 s cut-off, so the gateway answers 504 before the platform gives up.
  UPSTREAM_TIMEOUT_MS: z.preprocess(emptyAsUndefined, integer('UPSTREAM_TIMEOUT_MS', 5000, 50, 9000)),
  // Case-insensitive: INFO and info are the same level to an operator.
  LOG_LEVEL: z
    .preprocess(
      (value) => (typeof value === 'string' ? emptyAsUndefined(value.trim().toLowerCase()) : value),
      z.enum(LOG_LEVELS, { message: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }).optional(),
    )
    .transform((v) => v ?? 'info'),
  REDIS_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .trim()
      .refine((v) => /^rediss?:\/\//.test(v), 'REDIS_URL must start with redis:// or rediss://')
      .optional(),
  ),
  REDIS_SENTINELS: z.preprocess(emptyAsUndefined, hostPortList('REDIS_SENTINELS')),
  REDIS_SENTINEL_NAME: z.preprocess(emptyAsUndefined, z.string().trim().optional()),
  REDIS_CLUSTER_NODES: z.preprocess(emptyAsUndefined, hostPortList('REDIS_CLUSTER_NODES')),
  // For the Redis servers (all three forms); credentials in REDIS_URL take precedence.
  REDIS_USERNAME: z.preprocess(emptyAsUndefined, z.string().optional()),
  REDIS_PASSWORD: z.preprocess(emptyAsUndefined, z.string().optional()),
  REDIS_SENTINEL_PASSWORD: z.preprocess(emptyAsUndefined, z.string().optional()),
  REDIS_TLS: z.preprocess(emptyAsUndefined, z.enum(['0', '1'], { message: 'REDIS_TLS must be 0 or 1' }).optional()),
  REDIS_TLS_CA_FILE: z.preprocess(emptyAsUndefined, z.string().trim().optional()),
  RATE_LIMIT_REQUESTS: z.preprocess(emptyAsUndefined, integer('RATE_LIMIT_REQUESTS', 600, 1, 1_000_000)),
  RATE_LIMIT_WINDOW_SECONDS: z.preprocess(emptyAsUndefined, integer('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400)),
  CACHE_TTL_SECONDS: z.preprocess(emptyAsUndefined, integer('CACHE_TTL_SECONDS', 30, 0, 3600)),
  LOCAL_DATA_DIR: z.preprocess(emptyAsUndefined, z.string().optional()).transform((v) => v ?? join(DATA_DIR, 'local')),
  // The URL consumers use to reach the gateway (behind a proxy it differs from HOST:PORT).
  PUBLIC_BASE_URL: z.preprocess(
    emptyAsUndefined,
    url('PUBLIC_BASE_URL').refine(
      (value) => value === undefined || !/[?#]/.test(value),
      'PUBLIC_BASE_URL must not hold a query or fragment',
    ),
  ),
  USAGE_SPOOL_DIR: z
    .preprocess(emptyAsUndefined, z.string().trim().optional())
    .transform((v) => v ?? join(DATA_DIR, 'usage-spool')),
  // 0: callers connect directly. Behind a load balancer, the number of proxies that append to X-Forwarded-For.
  TRUSTED_PROXY_HOPS: z.preprocess(emptyAsUndefined, integer('TRUSTED_PROXY_HOPS', 0, 0, 10)),
  // Enough for a person fixing a typo or a script trying its keys; far too few to search for keys.
  UNKNOWN_KEYS_PER_MINUTE: z.preprocess(emptyAsUndefined, integer('UNKNOWN_KEYS_PER_MINUTE', 30, 1, 100_000)),
  // Bytes of cached answers. The heap holds several times the budget (string form, garbage not yet
  // collected), so 8 keeps the whole process, embedded local upstreams included, under 200 MB RSS.
  CACHE_MAX_MB: z.preprocess(emptyAsUndefined, integer('CACHE_MAX_MB', 8, 1, 4096)),
  // Open connections at most; beyond, new ones are closed at once. Each idle one costs tens of KB.
  MAX_CONNECTIONS: z.preprocess(emptyAsUndefined, integer('MAX_CONNECTIONS', 2000, 10, 100_000)),
  // Open connections one client address may hold. A browser opens 6, a busy server-side pool or an
  // office behind one NAT address a few dozen: 256 serves them all, yet one address gets an eighth
  // of the default MAX_CONNECTIONS at most.
  MAX_CONNECTIONS_PER_CLIENT: z.preprocess(emptyAsUndefined, integer('MAX_CONNECTIONS_PER_CLIENT', 256, 1, 100_000)),
  // Unset: /metrics, /readyz and /healthz are served on PORT. Set: only there.
  ADMIN_PORT: z.preprocess(emptyAsUndefined, integer('ADMIN_PORT', -1, 0, 65535)),
  SHUTDOWN_DELAY_SECONDS: z.preprocess(
    emptyAsUndefined,
    integer('SHUTDOWN_DELAY_SECONDS', DEFAULT_SHUTDOWN_DELAY_SECONDS, 0, 60),
  ),
  KEEP_ALIVE_TIMEOUT_MS: z.preprocess(
    emptyAsUndefined,
    integer('KEEP_ALIVE_TIMEOUT_MS', DEFAULT_KEEP_ALIVE_TIMEOUT_MS, 1000, 600_000),
  ),
  // Tracing: the OpenTelemetry SDK reads the OTEL_* variables itself (endpoint, headers, service
  // name, sampler). The gateway reads only whether tracing is on, and which OTLP encoding to load.
  OTEL_SDK_DISABLED: z.preprocess(emptyAsUndefined, z.string().trim().toLowerCase().optional()),
  OTEL_TRACES_EXPORTER: z.preprocess(emptyAsUndefined, z.string().trim().toLowerCase().optional()),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.preprocess(emptyAsUndefined, z.string().optional()),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.preprocess(emptyAsUndefined, z.string().optional()),
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol('OTEL_EXPORTER_OTLP_PROTOCOL'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'),
  // A caller's sampled flag is its own to set: by default it cannot raise sampling above the configured ratio.
  TRUST_CALLER_SAMPLING: z.preprocess(
    emptyAsUndefined,
    z
      .enum(['true', 'false'], { message: 'TRUST_CALLER_SAMPLING must be true or false' })
      .default('false')
      .transform((value) => value === 'true'),
  ),
});

export interface UpstreamTarget {
  readonly url: string;
  readonly token: string;
}

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** How to talk to the Redis servers: credentials (an ACL user, or `default` with only a password) and TLS. */
export interface RedisAccess {
  readonly username?: string;
  readonly password?: string;
  /** TLS to every server and sentinel; `ca`: the PEM certificates to trust instead of the system's. */
  readonly tls?: { readonly ca?: string };
}

/** Where the shared Redis is: one server, a master found through sentinels, or a cluster. */
export type RedisTarget = RedisAccess &
  (
    | { readonly kind: 'server'; readonly url: string }
    | {
        readonly kind: 'sentinel';
        readonly sentinels: readonly HostPort[];
        readonly name: string;
        readonly sentinelPassword?: string;
      }
    | { readonly kind: 'cluster'; readonly nodes: readonly HostPort[] }
  );

export interface Config {
  readonly port: number;
  readonly host: string;
  /** null: run the embedded local platform and key service (no upstreams configured). */
  readonly upstreams: { readonly platform: UpstreamTarget; readonly keyService: UpstreamTarget } | null;
  readonly upstreamTimeoutMs: number;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  /** null: no shared Redis; the request limit is counted in this process. */
  readonly redis: RedisTarget | null;
  readonly rateLimit: { readonly requests: number; readonly windowSeconds: number };
  readonly cacheTtlSeconds: number;
  /** Where the local key service keeps its data file (local mode only). */
  readonly localDataDir: string;
  /** The OpenAPI document's server URL, without a trailing slash; null: `/`. */
  readonly publicBaseUrl: string | null;
  /** Where usage events undelivered at shutdown are kept for the next instance (when Redis cannot take them). */
  readonly usageSpoolDir: string;
  /** Proxies in front of the gateway that append to X-Forwarded-For; 0 trusts only the socket. */
  readonly trustedProxyHops: number;
  /** Unknown keys one client address may present per minute before unseen keys get 429. */
  readonly unknownKeysPerMinute: number;
  /** Bytes of cached answers at most, in MiB. */
  readonly cacheMaxMb: number;
  /** Open connections on the public port at most. */
  readonly maxConnections: number;
  /** Open connections on the public port one client address may hold. */
  readonly maxConnectionsPerClient: number;
  /** Where /metrics, /readyz and /healthz are served instead of the public port; null: on the public port. */
  readonly adminPort: number | null;
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number;
  /** From SIGTERM to closing the public listener, serving meanwhile with /readyz failing. */
  readonly shutdownDelayMs: number;
  /** null: tracing off (no OTLP endpoint, or disabled by the OTEL_* variables). */
  readonly tracing: TracingConfig | null;
}

export interface TracingConfig {
  /** Which OTLP exporter package to load; the SDK reads everything else from OTEL_*. */
  readonly protocol: 'http/protobuf' | 'http/json';
  /** Whether a caller's sampled flag decides (TRUST_CALLER_SAMPLING); by default it cannot raise sampling. */
  readonly trustCallerSampling: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** The variables the key CLI reads (src/local/keysCli.ts), checked exactly as the gateway checks them. */
export const KeyCliEnvSchema = EnvSchema.pick({ KEY_SERVICE_URL: true, KEY_SERVICE_TOKEN: true, LOCAL_DATA_DIR: true });

/** The process environment, for the key CLI's own config: read here, so this file stays its only reader. */
export function processEnvironment(): Readonly<Record<string, string | undefined>> {
  return process.env;
}

/** One line per problem, naming the variable. */
export function problemLines(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`);
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemLines(parsed.error));
  const e = parsed.data;
  const problems: string[] = [];
  if (Boolean(e.PLATFORM_GRAPHQL_URL) !== Boolean(e.KEY_SERVICE_URL)) {
    problems.push(
      'PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL go together: set both to use real upstreams, or neither to run the embedded local platform',
    );
  }
  if (e.PLATFORM_GRAPHQL_URL && !e.PLATFORM_TOKEN)
    problems.push('PLATFORM_TOKEN is required with PLATFORM_GRAPHQL_URL');
  if (e.KEY_SERVICE_URL && !e.KEY_SERVICE_TOKEN) problems.push('KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL');
  const redisTargets = [e.REDIS_URL, e.REDIS_SENTINELS, e.REDIS_CLUSTER_NODES].filter((v) => v !== undefined);
  if (redisTargets.length > 1) {
    problems.push('REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES exclude each other: set at most one');
  }
  if (Boolean(e.REDIS_SENTINELS) !== Boolean(e.REDIS_SENTINEL_NAME)) {
    problems.push('REDIS_SENTINELS and REDIS_SENTINEL_NAME (the master group the sentinels watch) go together');
  }
  let ca: string | undefined;
  if (e.REDIS_TLS_CA_FILE !== undefined) {
    try {
      ca = readFileSync(e.REDIS_TLS_CA_FILE, 'utf8');
    } catch (err: unknown) {
      problems.push(`REDIS_TLS_CA_FILE cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const upstreams =
    e.PLATFORM_GRAPHQL_URL && e.KEY_SERVICE_URL && e.PLATFORM_TOKEN && e.KEY_SERVICE_TOKEN
      ? {
          platform: { url: e.PLATFORM_GRAPHQL_URL, token: e.PLATFORM_TOKEN },
          keyService: { url: e.KEY_SERVICE_URL.replace(/\/+$/, ''), token: e.KEY_SERVICE_TOKEN },
        }
      : null;

  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    upstreams,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    redis: redisTarget(e, {
      ...(e.REDIS_USERNAME === undefined ? {} : { username: e.REDIS_USERNAME }),
      ...(e.REDIS_PASSWORD === undefined ? {} : { password: e.REDIS_PASSWORD }),
      ...(e.REDIS_TLS === '1' || ca !== undefined ? { tls: ca === undefined ? {} : { ca } } : {}),
    }),
    rateLimit: Object.freeze({ requests: e.RATE_LIMIT_REQUESTS, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS }),
    cacheTtlSeconds: e.CACHE_TTL_SECONDS,
    localDataDir: e.LOCAL_DATA_DIR,
    publicBaseUrl: e.PUBLIC_BASE_URL?.replace(/\/+$/, '') ?? null,
    usageSpoolDir: e.USAGE_SPOOL_DIR,
    trustedProxyHops: e.TRUSTED_PROXY_HOPS,
    unknownKeysPerMinute: e.UNKNOWN_KEYS_PER_MINUTE,
    cacheMaxMb: e.CACHE_MAX_MB,
    maxConnections: e.MAX_CONNECTIONS,
    maxConnectionsPerClient: e.MAX_CONNECTIONS_PER_CLIENT,
    adminPort: e.ADMIN_PORT === -1 ? null : e.ADMIN_PORT,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    shutdownDelayMs: e.SHUTDOWN_DELAY_SECONDS * 1000,
    tracing: tracingConfig(e),
  });
}

/**
 * Tracing is on only when an OTLP endpoint is named, as the specification has it for OTLP: an
 * operator without a collector pays nothing. OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none
 * turn it off whatever else is set.
 */
function tracingConfig(e: z.infer<typeof EnvSchema>): TracingConfig | null {
  const endpoint = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (endpoint === undefined || e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none') return null;
  return Object.freeze({
    // The specification's default for OTLP over HTTP.
    protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    trustCallerSampling: e.TRUST_CALLER_SAMPLING,
  });
}

function redisTarget(e: z.infer<typeof EnvSchema>, access: RedisAccess): RedisTarget | null {
  const { REDIS_URL: url, REDIS_SENTINELS: sentinels, REDIS_SENTINEL_NAME: name, REDIS_CLUSTER_NODES: nodes } = e;
  if (url !== undefined) return Object.freeze({ kind: 'server', url, ...access });
  if (sentinels !== undefined && name !== undefined) {
    const sentinelPassword = e.REDIS_SENTINEL_PASSWORD;
    return Object.freeze({
      kind: 'sentinel',
      sentinels,
      name,
      ...access,
      ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
    });
  }
  if (nodes !== undefined) return Object.freeze({ kind: 'cluster', nodes, ...access });
  return null;
}
