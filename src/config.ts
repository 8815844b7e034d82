import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';

// The only reader of process.env: every variable is checked once at start, and a bad value stops
// the process with one line per problem. Meanings and defaults: .env.example (checked against this).

/** Above the 60 s idle timeout of common load balancers, which must close an idle connection first (else 502s). */
export const DEFAULT_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** Long enough for a load balancer to see /readyz fail (two checks a couple of seconds apart) before the listener closes. */
export const DEFAULT_SHUTDOWN_DELAY_SECONDS = 5;

/** `data/` in the application's folder (above src/ or dist/), wherever the process starts: the one folder it writes to. */
export const DATA_DIR = join(fileURLToPath(new URL('..', import.meta.url)), 'data');

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The variable an issue is about, so that every message names it. */
const variable = (issue: { readonly path?: PropertyKey[] }) => String(issue.path?.[0] ?? 'the value');

/** An empty value is unset, as .env.example leaves them. */
const unsetIfEmpty = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (typeof value === 'string' && value.trim() === '' ? undefined : value), schema);

const text = unsetIfEmpty(z.string().optional());
const trimmed = unsetIfEmpty(z.string().trim().optional());
const lowerCase = unsetIfEmpty(z.string().trim().toLowerCase().optional());

/** Every bound in one wording, so an operator always learns the allowed range and what was given. */
const integer = (fallback: number, min: number, max: number) =>
  unsetIfEmpty(
    z
      .string()
      .trim()
      .refine((value) => /^\d+$/.test(value) && Number(value) >= min && Number(value) <= max, {
        error: (issue) => `${variable(issue)} must be between ${min} and ${max} (got ${String(issue.input)})`,
      })
      .transform(Number)
      .default(fallback),
  );

const httpUrl = z
  .string()
  .trim()
  .url({ error: (issue) => `${variable(issue)} must be an absolute http(s) URL` })
  .refine((value) => /^https?:\/\//.test(value), { error: (issue) => `${variable(issue)} must use http or https` });

/** The OTLP encodings the gateway carries an exporter for (gRPC it does not). */
const otlpProtocol = unsetIfEmpty(
  z
    .enum(['http/protobuf', 'http/json'], { error: (issue) => `${variable(issue)} must be http/protobuf or http/json` })
    .optional(),
);

const hostPort = z
  .string()
  .regex(/^[^\s:,]+:\d{1,5}$/, { error: (issue) => `${variable(issue)} must be a comma-separated list of host:port` })
  .transform((item) => ({ host: item.replace(/:\d+$/, ''), port: Number(item.replace(/^[^:]*:/, '')) }))
  .refine((node) => node.port >= 1 && node.port <= 65535, {
    error: (issue) => `${variable(issue)}: ports go from 1 to 65535`,
  });

/** A comma-separated list of host:port, e.g. `10.0.0.1:26379,10.0.0.2:26379`. */
const hostPorts = unsetIfEmpty(
  z
    .string()
    .trim()
    .transform((value) => value.split(/\s*,\s*/).filter((item) => item !== ''))
    .pipe(z.array(hostPort).min(1, { error: (issue) => `${variable(issue)} must name at least one host:port` }))
    .optional(),
);

export const EnvSchema = z.object({
  PORT: integer(3000, 0, 65535),
  HOST: unsetIfEmpty(z.string().trim().default('127.0.0.1')),
  PLATFORM_GRAPHQL_URL: unsetIfEmpty(httpUrl.optional()),
  PLATFORM_TOKEN: text,
  KEY_SERVICE_URL: unsetIfEmpty(httpUrl.optional()),
  KEY_SERVICE_TOKEN: text,
  // Below the platform's own 10 s cut-off, so the gateway answers 504 before the platform gives up.
  UPSTREAM_TIMEOUT_MS: integer(5000, 50, 9000),
  // Case-insensitive: INFO and info are the same level to an operator.
  LOG_LEVEL: z.preprocess(
    (value) => (typeof value === 'string' ? value.trim().toLowerCase() || undefined : value),
    z.enum(LOG_LEVELS, { error: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }).default('info'),
  ),
  REDIS_URL: trimmed.refine(
    (value) => value === undefined || /^rediss?:\/\//.test(value),
    'REDIS_URL must start with redis:// or rediss://',
  ),
  REDIS_SENTINELS: hostPorts,
  REDIS_SENTINEL_NAME: trimmed,
  REDIS_CLUSTER_NODES: hostPorts,
  // For the Redis servers (all three forms); credentials in REDIS_URL take precedence.
  REDIS_USERNAME: text,
  REDIS_PASSWORD: text,
  REDIS_SENTINEL_PASSWORD: text,
  REDIS_TLS: unsetIfEmpty(z.enum(['0', '1'], { error: 'REDIS_TLS must be 0 or 1' }).optional()),
  REDIS_TLS_CA_FILE: trimmed,
  RATE_LIMIT_REQUESTS: integer(600, 1, 1_000_000),
  RATE_LIMIT_WINDOW_SECONDS: integer(60, 1, 86_400),
  CACHE_TTL_SECONDS: integer(30, 0, 3600),
  LOCAL_DATA_DIR: unsetIfEmpty(z.string().default(join(DATA_DIR, 'local'))),
  PUBLIC_BASE_URL: unsetIfEmpty(
    httpUrl.refine((value) => !/[?#]/.test(value), 'PUBLIC_BASE_URL must not hold a query or fragment').optional(),
  ),
  USAGE_SPOOL_DIR: unsetIfEmpty(z.string().trim().default(join(DATA_DIR, 'usage-spool'))),
  TRUSTED_PROXY_HOPS: integer(0, 0, 10),
  // Enough for a person fixing a typo or a script trying its keys; far too few to search for keys.
  UNKNOWN_KEYS_PER_MINUTE: integer(30, 1, 100_000),
  // The heap holds several times the budget (string form, garbage not yet collected), so 8 keeps
  // the whole process, embedded local upstreams included, under 200 MB RSS.
  CACHE_MAX_MB: integer(8, 1, 4096),
  // Each idle connection costs tens of KB.
  MAX_CONNECTIONS: integer(2000, 10, 100_000),
  // A browser opens 6, a busy server-side pool or an office behind one NAT address a few dozen:
  // 256 serves them all, yet one address gets an eighth of the default MAX_CONNECTIONS at most.
  MAX_CONNECTIONS_PER_CLIENT: integer(256, 1, 100_000),
  // -1: unset, /metrics, /readyz and /healthz are served on PORT.
  ADMIN_PORT: integer(-1, 0, 65535),
  SHUTDOWN_DELAY_SECONDS: integer(DEFAULT_SHUTDOWN_DELAY_SECONDS, 0, 60),
  KEEP_ALIVE_TIMEOUT_MS: integer(DEFAULT_KEEP_ALIVE_TIMEOUT_MS, 1000, 600_000),
  // The OpenTelemetry SDK reads the OTEL_* variables itself (endpoint, headers, service name,
  // sampler). The gateway reads only whether tracing is on, and which OTLP encoding to load.
  OTEL_SDK_DISABLED: lowerCase,
  OTEL_TRACES_EXPORTER: lowerCase,
  OTEL_EXPORTER_OTLP_ENDPOINT: text,
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: text,
  OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
  TRUST_CALLER_SAMPLING: unsetIfEmpty(
    z
      .enum(['true', 'false'], { error: 'TRUST_CALLER_SAMPLING must be true or false' })
      .default('false')
      .transform((value) => value === 'true'),
  ),
});

export type UpstreamTarget = { readonly url: string; readonly token: string };

type HostPort = { readonly host: string; readonly port: number };

/**
 * Where the shared Redis is: one server, a master found through sentinels, or a cluster; with an ACL
 * user (or `default` with only a password) and TLS (`ca`: PEM certificates to trust instead of the system's).
 */
export type RedisTarget = {
  readonly username?: string;
  readonly password?: string;
  readonly tls?: { readonly ca?: string };
} & (
  | { readonly kind: 'server'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly HostPort[];
      readonly name: string;
      readonly sentinelPassword?: string;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly HostPort[] }
);

/** Typed and frozen; `upstreams` null: run the embedded local ones; `redis` null: count in this process. */
export type Config = ReturnType<typeof loadConfig>;

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

/** 127.0.0.0/8, ::1 and localhost: addresses only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(\.\d{1,3}){3}$/.test(bare);
}

/** One line per problem, naming the variable. */
export function problemLines(error: z.ZodError): string[] {
  return error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`);
}

export function loadConfig(env: Record<string, string | undefined> = process.env) {
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
  // The embedded stand-in serves published demo keys and made-up data: a gateway others can reach
  // (a container, a server) must never fall back to it because its upstream settings went missing.
  if (!e.PLATFORM_GRAPHQL_URL && !e.KEY_SERVICE_URL && !isLoopbackHost(e.HOST)) {
    problems.push(
      `PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL (with their tokens) are required with HOST=${e.HOST}: the embedded demo upstreams run only on a loopback HOST`,
    );
  }
  if ([e.REDIS_URL, e.REDIS_SENTINELS, e.REDIS_CLUSTER_NODES].filter((v) => v !== undefined).length > 1) {
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

  const access = {
    ...(e.REDIS_USERNAME === undefined ? {} : { username: e.REDIS_USERNAME }),
    ...(e.REDIS_PASSWORD === undefined ? {} : { password: e.REDIS_PASSWORD }),
    ...(e.REDIS_TLS === '1' || ca !== undefined ? { tls: ca === undefined ? {} : { ca } } : {}),
  };
  const sentinelPassword =
    e.REDIS_SENTINEL_PASSWORD === undefined ? {} : { sentinelPassword: e.REDIS_SENTINEL_PASSWORD };
  let redis: RedisTarget | null = null;
  if (e.REDIS_URL !== undefined) redis = { kind: 'server', url: e.REDIS_URL, ...access };
  const { REDIS_SENTINELS: sentinels, REDIS_SENTINEL_NAME: name } = e;
  if (sentinels !== undefined && name !== undefined)
    redis = { kind: 'sentinel', sentinels, name, ...access, ...sentinelPassword };
  if (e.REDIS_CLUSTER_NODES !== undefined) redis = { kind: 'cluster', nodes: e.REDIS_CLUSTER_NODES, ...access };
  // Tracing is on only when an OTLP endpoint is named, as the specification has it for OTLP: an
  // operator without a collector pays nothing.
  const endpoint = e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? e.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracingOff = endpoint === undefined || e.OTEL_SDK_DISABLED === 'true' || e.OTEL_TRACES_EXPORTER === 'none';

  return Object.freeze({
    port: e.PORT,
    host: e.HOST,
    upstreams:
      e.PLATFORM_GRAPHQL_URL && e.KEY_SERVICE_URL && e.PLATFORM_TOKEN && e.KEY_SERVICE_TOKEN
        ? {
            platform: { url: e.PLATFORM_GRAPHQL_URL, token: e.PLATFORM_TOKEN },
            keyService: { url: e.KEY_SERVICE_URL.replace(/\/+$/, ''), token: e.KEY_SERVICE_TOKEN },
          }
        : null,
    upstreamTimeoutMs: e.UPSTREAM_TIMEOUT_MS,
    logLevel: e.LOG_LEVEL,
    redis: redis === null ? null : Object.freeze(redis),
    rateLimit: Object.freeze({ requests: e.RATE_LIMIT_REQUESTS, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS }),
    cacheTtlSeconds: e.CACHE_TTL_SECONDS,
    localDataDir: e.LOCAL_DATA_DIR,
    /** The OpenAPI document's server URL, without a trailing slash; null: `/`. */
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
    tracing: tracingOff
      ? null
      : Object.freeze({
          // The specification's default for OTLP over HTTP.
          protocol: e.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? e.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
          trustCallerSampling: e.TRUST_CALLER_SAMPLING,
        }),
  });
}
