import { createServer } from 'node:net';

/**
 * The environment of a gateway process a test starts "as a newcomer would": the test
 * runner's own (PATH, HOME, npm's settings) with none of the gateway's configuration
 * variables, plus exactly the ones the test gives. The one place tests copy the
 * environment for a child process.
 */

/** Every variable src/config.ts reads. */
export const GATEWAY_VARIABLES = [
  'PORT',
  'HOST',
  'PLATFORM_GRAPHQL_URL',
  'PLATFORM_TOKEN',
  'KEY_SERVICE_URL',
  'KEY_SERVICE_TOKEN',
  'UPSTREAM_TIMEOUT_MS',
  'LOG_LEVEL',
  'REDIS_URL',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_NAME',
  'REDIS_CLUSTER_NODES',
  'REDIS_USERNAME',
  'REDIS_PASSWORD',
  'REDIS_SENTINEL_PASSWORD',
  'REDIS_TLS',
  'REDIS_TLS_CA_FILE',
  'RATE_LIMIT_REQUESTS',
  'RATE_LIMIT_WINDOW_SECONDS',
  'CACHE_TTL_SECONDS',
  'LOCAL_DATA_DIR',
  'KEEP_ALIVE_TIMEOUT_MS',
  'SHUTDOWN_DELAY_SECONDS',
  'OTEL_SDK_DISABLED',
  'OTEL_TRACES_EXPORTER',
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_SERVICE_NAME',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
] as const;

export function childEnvironment(set: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !(GATEWAY_VARIABLES as readonly string[]).includes(name)) env[name] = value;
  }
  return { ...env, ...set };
}

/** A loopback port nothing listens on right now (the OS picked it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
