import assert from 'node:assert/strict';
import { join } from 'node:path';
import { ConfigError, DATA_DIR, loadConfig } from '../src/config.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err: unknown) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  assert.fail('expected a ConfigError');
}

const REAL_UPSTREAMS = {
  PLATFORM_GRAPHQL_URL: 'https://platform.internal/graphql',
  PLATFORM_TOKEN: 'p-token',
  KEY_SERVICE_URL: 'https://keys.internal/',
  KEY_SERVICE_TOKEN: 'k-token',
};

describe('config', () => {
  it('needs nothing: local upstreams and documented defaults', () => {
    const config = loadConfig({});
    assert.deepEqual(config, {
      port: 3000,
      host: '127.0.0.1',
      upstreams: null,
      upstreamTimeoutMs: 5000,
      logLevel: 'info',
      redis: null,
      rateLimit: { requests: 600, windowSeconds: 60 },
      cacheTtlSeconds: 30,
      localDataDir: join(DATA_DIR, 'local'),
      publicBaseUrl: null,
      usageSpoolDir: join(DATA_DIR, 'usage-spool'),
      trustedProxyHops: 0,
      unknownKeysPerMinute: 30,
      cacheMaxMb: 8,
      maxConnections: 2000,
      maxConnectionsPerClient: 256,
      adminPort: null,
      keepAliveTimeoutMs: 65_000,
      shutdownDelayMs: 5000,
      tracing: null,
    });
    assert.ok(Object.isFrozen(config));
  });

  it('takes PUBLIC_BASE_URL as an absolute http(s) URL without query or fragment, trimming trailing slashes', () => {
    assert.equal(
      loadConfig({ PUBLIC_BASE_URL: 'https://api.example.test/' }).publicBaseUrl,
      'https://api.example.test',
    );
    assert.equal(
      loadConfig({ PUBLIC_BASE_URL: 'https://example.test/seo//' }).publicBaseUrl,
      'https://example.test/seo',
    );
    for (const bad of [
      '/relative',
      'ftp://example.test',
      'https://example.test/?x=1',
      'https://example.test/#top',
      'not a url',
    ]) {
      assert.throws(() => loadConfig({ PUBLIC_BASE_URL: bad }), /PUBLIC_BASE_URL/, bad);
    }
  });

  it('treats empty values as unset, as .env.example leaves them', () => {
    assert.equal(loadConfig({ PLATFORM_GRAPHQL_URL: '', KEY_SERVICE_URL: ' ', REDIS_URL: '' }).upstreams, null);
  });

  it('takes real upstreams with their tokens, trimming a trailing slash from the key service URL', () => {
    const config = loadConfig({ ...REAL_UPSTREAMS, REDIS_URL: 'redis://127.0.0.1:6380', CACHE_TTL_SECONDS: '0' });
    assert.deepEqual(config.upstreams, {
      platform: { url: 'https://platform.internal/graphql', token: 'p-token' },
      keyService: { url: 'https://keys.internal', token: 'k-token' },
    });
    assert.deepEqual(config.redis, { kind: 'server', url: 'redis://127.0.0.1:6380' });
    assert.equal(config.cacheTtlSeconds, 0);
  });

  it('takes a Redis behind sentinels, or a Redis cluster, as host:port lists', () => {
    assert.deepEqual(
      loadConfig({ REDIS_SENTINELS: '10.0.0.1:26379, 10.0.0.2:26380', REDIS_SENTINEL_NAME: 'gateway' }).redis,
      {
        kind: 'sentinel',
        sentinels: [
          { host: '10.0.0.1', port: 26379 },
          { host: '10.0.0.2', port: 26380 },
        ],
        name: 'gateway',
      },
    );
    assert.deepEqual(loadConfig({ REDIS_CLUSTER_NODES: 'redis-a:7000,redis-b:7001' }).redis, {
      kind: 'cluster',
      nodes: [
        { host: 'redis-a', port: 7000 },
        { host: 'redis-b', port: 7001 },
      ],
    });
  });

  it("takes Redis credentials and TLS for every form, the sentinels' own password apart", () => {
    const access = { REDIS_USERNAME: 'gateway', REDIS_PASSWORD: 'secret', REDIS_TLS: '1' };
    assert.deepEqual(loadConfig({ ...access, REDIS_URL: 'redis://10.0.0.1:6379' }).redis, {
      kind: 'server',
      url: 'redis://10.0.0.1:6379',
      username: 'gateway',
      password: 'secret',
      tls: {},
    });
    assert.deepEqual(
      loadConfig({ ...access, REDIS_SENTINELS: 'a:26379', REDIS_SENTINEL_NAME: 'g', REDIS_SENTINEL_PASSWORD: 's' })
        .redis,
      {
        kind: 'sentinel',
        sentinels: [{ host: 'a', port: 26379 }],
        name: 'g',
        username: 'gateway',
        password: 'secret',
        tls: {},
        sentinelPassword: 's',
      },
    );
    assert.deepEqual(problemsOf({ REDIS_URL: 'redis://a:6379', REDIS_TLS: 'yes' }), [
      'REDIS_TLS: REDIS_TLS must be 0 or 1',
    ]);
    assert.deepEqual(problemsOf({ REDIS_URL: 'rediss://a:6379', REDIS_TLS_CA_FILE: '/nonexistent/ca.pem' }), [
      'REDIS_TLS_CA_FILE cannot be read (ENOENT)',
    ]);
  });

  it('refuses two Redis targets at once, sentinels without their master name, and bad host:port lists', () => {
    assert.deepEqual(problemsOf({ REDIS_URL: 'redis://127.0.0.1:6380', REDIS_CLUSTER_NODES: 'a:7000' }), [
      'REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES exclude each other: set at most one',
    ]);
    assert.deepEqual(problemsOf({ REDIS_SENTINELS: 'a:26379' }), [
      'REDIS_SENTINELS and REDIS_SENTINEL_NAME (the master group the sentinels watch) go together',
    ]);
    assert.match(
      problemsOf({ REDIS_CLUSTER_NODES: 'a:7000,b' }).join(),
      /REDIS_CLUSTER_NODES must be a comma-separated list of host:port/,
    );
    assert.match(
      problemsOf({ REDIS_CLUSTER_NODES: 'a:70000' }).join(),
      /REDIS_CLUSTER_NODES: ports go from 1 to 65535/,
    );
    assert.match(
      problemsOf({ REDIS_CLUSTER_NODES: ' , ' }).join(),
      /REDIS_CLUSTER_NODES must name at least one host:port/,
    );
  });

  it('refuses one upstream URL without the other, saying both go together', () => {
    const problems = problemsOf({ PLATFORM_GRAPHQL_URL: REAL_UPSTREAMS.PLATFORM_GRAPHQL_URL, PLATFORM_TOKEN: 'x' });
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL go together/);
  });

  it('runs the embedded demo upstreams only on a loopback HOST: elsewhere the upstream URLs are required', () => {
    for (const host of ['127.0.0.1', '127.3.2.1', '::1', '[::1]', 'localhost', 'LOCALHOST'])
      assert.equal(loadConfig({ HOST: host }).upstreams, null, host);
    for (const host of ['0.0.0.0', '::', '10.0.0.7', 'gateway.internal', '128.0.0.1']) {
      assert.deepEqual(problemsOf({ HOST: host }), [
        `PLATFORM_GRAPHQL_URL and KEY_SERVICE_URL (with their tokens) are required with HOST=${host}: the embedded demo upstreams run only on a loopback HOST`,
      ]);
      assert.notEqual(loadConfig({ ...REAL_UPSTREAMS, HOST: host }).upstreams, null, host);
    }
  });

  it('refuses an upstream URL without its token', () => {
    const problems = problemsOf({ ...REAL_UPSTREAMS, PLATFORM_TOKEN: '', KEY_SERVICE_TOKEN: '' });
    assert.deepEqual(problems, [
      'PLATFORM_TOKEN is required with PLATFORM_GRAPHQL_URL',
      'KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL',
    ]);
  });

  it('names every bad value at once, one clear line each', () => {
    const problems = problemsOf({
      PORT: 'eighty',
      UPSTREAM_TIMEOUT_MS: '10000',
      LOG_LEVEL: 'loud',
      REDIS_URL: 'localhost:6379',
      RATE_LIMIT_REQUESTS: '0',
      CACHE_TTL_SECONDS: '-1',
      PLATFORM_GRAPHQL_URL: 'ftp://platform',
    });
    const text = problems.join('\n');
    assert.match(text, /PORT: PORT must be between 0 and 65535 \(got eighty\)/);
    assert.match(text, /UPSTREAM_TIMEOUT_MS: UPSTREAM_TIMEOUT_MS must be between 50 and 9000 \(got 10000\)/);
    assert.match(text, /LOG_LEVEL: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/);
    assert.match(text, /REDIS_URL: REDIS_URL must start with redis:\/\/ or rediss:\/\//);
    assert.match(text, /RATE_LIMIT_REQUESTS: RATE_LIMIT_REQUESTS must be between 1 and 1000000 \(got 0\)/);
    assert.match(text, /CACHE_TTL_SECONDS: CACHE_TTL_SECONDS must be between 0 and 3600 \(got -1\)/);
    assert.match(text, /PLATFORM_GRAPHQL_URL: PLATFORM_GRAPHQL_URL must use http or https/);
    assert.equal(problems.length, 7);
  });

  it('bounds the flood settings', () => {
    const config = loadConfig({
      TRUSTED_PROXY_HOPS: '1',
      UNKNOWN_KEYS_PER_MINUTE: '5',
      CACHE_MAX_MB: '8',
      MAX_CONNECTIONS: '100',
      ADMIN_PORT: '9091',
    });
    assert.deepEqual(
      [
        config.trustedProxyHops,
        config.unknownKeysPerMinute,
        config.cacheMaxMb,
        config.maxConnections,
        config.adminPort,
      ],
      [1, 5, 8, 100, 9091],
    );
    const text = problemsOf({
      TRUSTED_PROXY_HOPS: '11',
      UNKNOWN_KEYS_PER_MINUTE: '0',
      CACHE_MAX_MB: '0',
      MAX_CONNECTIONS: '5',
      ADMIN_PORT: '70000',
    }).join('\n');
    for (const name of [
      'TRUSTED_PROXY_HOPS',
      'UNKNOWN_KEYS_PER_MINUTE',
      'CACHE_MAX_MB',
      'MAX_CONNECTIONS',
      'ADMIN_PORT',
    ]) {
      assert.match(text, new RegExp(`${name}: ${name} must be`));
    }
  });

  it('keeps the upstream timeout below the platform cut-off of 10 s', () => {
    assert.equal(loadConfig({ UPSTREAM_TIMEOUT_MS: '9000' }).upstreamTimeoutMs, 9000);
    assert.match(problemsOf({ UPSTREAM_TIMEOUT_MS: '9001' }).join(), /between 50 and 9000 \(got 9001\)/);
  });

  it('reads LOG_LEVEL whatever its case', () => {
    assert.equal(loadConfig({ LOG_LEVEL: 'INFO' }).logLevel, 'info');
    assert.equal(loadConfig({ LOG_LEVEL: ' Warn ' }).logLevel, 'warn');
  });

  it('keeps idle connections open longer than a load balancer would (65 s), within its bounds', () => {
    assert.equal(loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '120000' }).keepAliveTimeoutMs, 120_000);
    assert.deepEqual(problemsOf({ KEEP_ALIVE_TIMEOUT_MS: '999' }), [
      'KEEP_ALIVE_TIMEOUT_MS: KEEP_ALIVE_TIMEOUT_MS must be between 1000 and 600000 (got 999)',
    ]);
  });

  describe('tracing (OTEL_*)', () => {
    it('is off without an OTLP endpoint, or when the SDK or the exporter is turned off', () => {
      assert.equal(loadConfig({ OTEL_SERVICE_NAME: 'gw' }).tracing, null);
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
      assert.equal(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing, null);
      assert.equal(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing, null);
    });

    it('loads the exporter for the OTLP encoding named, protobuf by default; the SDK reads the rest', () => {
      const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' };
      assert.deepEqual(loadConfig(endpoint).tracing, { protocol: 'http/protobuf', trustCallerSampling: false });
      assert.deepEqual(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9999/custom' }).tracing, {
        protocol: 'http/protobuf',
        trustCallerSampling: false,
      });
      assert.deepEqual(
        loadConfig({
          ...endpoint,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
          TRUST_CALLER_SAMPLING: 'true',
        }).tracing,
        { protocol: 'http/json', trustCallerSampling: true },
      );
    });

    it('refuses what it cannot honour, one line each', () => {
      const problems = problemsOf({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        TRUST_CALLER_SAMPLING: 'yes',
      });
      assert.deepEqual(problems, [
        'OTEL_EXPORTER_OTLP_PROTOCOL: OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json',
        'TRUST_CALLER_SAMPLING: TRUST_CALLER_SAMPLING must be true or false',
      ]);
    });
  });
});
