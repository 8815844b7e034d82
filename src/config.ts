import { z } from 'zod';
import { TelemetryEnv, tracingConfig, type TracingConfig } from './telemetry/telemetryConfig.js';

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

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const url = (name: string) =>
  z
    .string()
    .trim()
    .url(`${name} must be an absolute http(s) URL`)
    .refine((value) => /^https?:\/\//.test(value), `${name} must use http or https`)
    .optional();

const emptyAsUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

const EnvSchema = z.object({
  PORT: z.preprocess(emptyAsUndefined, integer('PORT', 3000, 0, 65535)),
  HOST: z.preprocess(emptyAsUndefined, z.string().trim().optional()).transform((v) => v ?? '127.0.0.1'),
  PLATFORM_GRAPHQL_URL: z.preprocess(emptyAsUndefined, url('PLATFORM_GRAPHQL_URL')),
  PLATFORM_TOKEN: z.preprocess(emptyAsUndefined, z.string().optional()),
  KEY_SERVICE_URL: z.preprocess(emptyAsUndefined, url('KEY_SERVICE_URL')),
  KEY_SERVICE_TOKEN: z.preprocess(emptyAsUndefined, z.string().optional()),
  // Below the platform's own 10 s cut-off, so the gateway answers 504 before the platform gives up.
  UPSTREAM_TIMEOUT_MS: z.preprocess(emptyAsUndefined, integer('UPSTREAM_TIMEOUT_MS', 5000, 50, 9000)),
  // Case-insensitive: INFO and info are the same level to an operator.
  LOG_LEVEL: z.preprocess(
    (value) => (typeof value === 'string' ? emptyAsUndefined(value.trim().toLowerCase()) : value),
    z.enum(LOG_LEVELS, { message: `LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}` }).optional(),
  ).transform((v) => v ?? 'info'),
  REDIS_URL: z.preprocess(
    emptyAsUndefined,
    z
      .string()
      .trim()
      .refine((v) => /^rediss?:\/\//.test(v), 'REDIS_URL must start with redis:// or rediss://')
      .optional(),
  ),
  RATE_LIMIT_REQUESTS: z.preprocess(emptyAsUndefined, integer('RATE_LIMIT_REQUESTS', 600, 1, 1_000_000)),
  RATE_LIMIT_WINDOW_SECONDS: z.preprocess(emptyAsUndefined, integer('RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400)),
  CACHE_TTL_SECONDS: z.preprocess(emptyAsUndefined, integer('CACHE_TTL_SECONDS', 30, 0, 3600)),
  LOCAL_DATA_DIR: z.preprocess(emptyAsUndefined, z.string().optional()).transform((v) => v ?? '.local'),
  KEEP_ALIVE_TIMEOUT_MS: z.preprocess(
    emptyAsUndefined,
    integer('KEEP_ALIVE_TIMEOUT_MS', DEFAULT_KEEP_ALIVE_TIMEOUT_MS, 1000, 600_000),
  ),
  ...TelemetryEnv,
});

export interface UpstreamTarget {
  readonly url: string;
  readonly token: string;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  /** null: run the embedded local platform and key service (no upstreams configured). */
  readonly upstreams: { readonly platform: UpstreamTarget; readonly keyService: UpstreamTarget } | null;
  readonly upstreamTimeoutMs: number;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly redisUrl: string | null;
  readonly rateLimit: { readonly requests: number; readonly windowSeconds: number };
  readonly cacheTtlSeconds: number;
  /** Where the local key service keeps its data file (local mode only). */
  readonly localDataDir: string;
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number;
  /** null: tracing off (no OTLP endpoint, or disabled by the OTEL_* variables). */
  readonly tracing: TracingConfig | null;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** What the key CLI needs: a key service to talk to (null: the local one) and the local data dir. */
export interface KeyCliConfig {
  readonly keyService: UpstreamTarget | null;
  readonly localDataDir: string;
}

/**
 * The key CLI's configuration: only KEY_SERVICE_URL / KEY_SERVICE_TOKEN and
 * LOCAL_DATA_DIR matter, so an operator can manage keys without naming a platform.
 */
export function loadKeyCliConfig(env: Record<string, string | undefined> = process.env): KeyCliConfig {
  const parsed = EnvSchema.pick({ KEY_SERVICE_URL: true, KEY_SERVICE_TOKEN: true, LOCAL_DATA_DIR: true }).safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`));
  }
  const e = parsed.data;
  if (e.KEY_SERVICE_URL && !e.KEY_SERVICE_TOKEN) throw new ConfigError(['KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL']);
  return Object.freeze({
    keyService:
      e.KEY_SERVICE_URL && e.KEY_SERVICE_TOKEN
        ? { url: e.KEY_SERVICE_URL.replace(/\/+$/, ''), token: e.KEY_SERVICE_TOKEN }
        : null,
    localDataDir: e.LOCAL_DATA_DIR,
  });
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.') || 'env'}: ${issue.message}`));
  }
  const e = parsed.data;
  const problems: string[] = [];
  if (Boolean(e.PLATFORM_GRAPHQL_URL) !== Boolean(e.KEY_SERVICE_URL)) {
    problems.push(
      'PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL go together: set both to use real upstreams, or neither to run the embedded local platform',
    );
  }
  if (e.PLATFORM_GRAPHQL_URL && !e.PLATFORM_TOKEN) problems.push('PLATFORM_TOKEN is required with PLATFORM_GRAPHQL_URL');
  if (e.KEY_SERVICE_URL && !e.KEY_SERVICE_TOKEN) problems.push('KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL');
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
    redisUrl: e.REDIS_URL ?? null,
    rateLimit: Object.freeze({ requests: e.RATE_LIMIT_REQUESTS, windowSeconds: e.RATE_LIMIT_WINDOW_SECONDS }),
    cacheTtlSeconds: e.CACHE_TTL_SECONDS,
    localDataDir: e.LOCAL_DATA_DIR,
    keepAliveTimeoutMs: e.KEEP_ALIVE_TIMEOUT_MS,
    tracing: tracingConfig(e),
  });
}
