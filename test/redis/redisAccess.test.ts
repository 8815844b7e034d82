import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { closeRedis, connectRedis, type RedisConnection, redisReady } from '../../src/redis/connectRedis.js';
import { eventually } from '../support/eventually.js';
import { freePort, type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';
import { type SentinelSet, startSentinelSet } from '../support/redisTopology.js';
import { tempDir } from '../support/tempDir.js';

const silent = pino({ level: 'silent' });
const NOW = Date.parse('2026-11-21T12:00:15.000Z');

/**
 * Redis that demands credentials or TLS, configured the way an operator does (environment
 * variables through loadConfig): the gateway's connection is served with them, and refused without.
 */
describe('Redis with a password, an ACL user, sentinels with their own password, TLS', function () {
  this.timeout(60_000);
  const connections: RedisConnection[] = [];
  const servers: Array<{ stop(): Promise<void> }> = [];
  let dir: Awaited<ReturnType<typeof tempDir>>;

  before(async function () {
    skipWithoutRedis(this);
    dir = await tempDir('redis-access-');
  });
  after(async () => {
    for (const connection of connections) closeRedis(connection);
    await Promise.all(servers.map((server) => server.stop()));
    await dir?.remove();
  });

  /** A connection as the gateway builds it from `env`; true once a request-limit call is served through it. */
  const serves = async (env: Record<string, string>, withinMs = 5000): Promise<boolean> => {
    const target = loadConfig(env).redis;
    assert.ok(target);
    const connection = connectRedis(target, silent);
    connections.push(connection);
    try {
      await eventually('ready', () => redisReady(connection), withinMs);
    } catch {
      return false;
    }
    const limiter = createRedisAdmission({ requests: 10, windowSeconds: 60, redis: connection, logger: silent });
    const decision = await limiter.take('org_access', NOW);
    await limiter.close();
    return decision.allowed;
  };
  const start = async (args: string[]): Promise<RedisServer> => {
    const server = await startRedisServer({ args });
    servers.push(server);
    return server;
  };

  it('requirepass: the password in the URL or in REDIS_PASSWORD; none, refused', async () => {
    const redis = await start(['--requirepass', 'pass word']);
    assert.equal(await serves({ REDIS_URL: `redis://:pass%20word@127.0.0.1:${redis.port}` }), true);
    assert.equal(await serves({ REDIS_URL: redis.url, REDIS_PASSWORD: 'pass word' }), true);
    assert.equal(await serves({ REDIS_URL: redis.url }, 1500), false);
  });

  it('an ACL user: REDIS_USERNAME and REDIS_PASSWORD, or both in the URL', async () => {
    const redis = await start([
      '--user',
      'default',
      'off',
      '--user',
      'gateway',
      'on',
      '>gw-secret',
      '~*',
      '&*',
      '+@all',
    ]);
    assert.equal(await serves({ REDIS_URL: redis.url, REDIS_USERNAME: 'gateway', REDIS_PASSWORD: 'gw-secret' }), true);
    assert.equal(await serves({ REDIS_URL: `redis://gateway:gw-secret@127.0.0.1:${redis.port}` }), true);
    assert.equal(await serves({ REDIS_URL: redis.url, REDIS_PASSWORD: 'gw-secret' }, 1500), false);
  });

  it('sentinels with their own password (REDIS_SENTINEL_PASSWORD) watching a master with another', async () => {
    const set: SentinelSet = await startSentinelSet({ password: 'data-secret', sentinelPassword: 'sentinel-secret' });
    servers.push(set);
    const env = {
      REDIS_SENTINELS: set.sentinels.map((sentinel) => `127.0.0.1:${sentinel.port}`).join(','),
      REDIS_SENTINEL_NAME: set.name,
      REDIS_PASSWORD: 'data-secret',
    };
    assert.equal(await serves({ ...env, REDIS_SENTINEL_PASSWORD: 'sentinel-secret' }), true);
    assert.equal(await serves(env, 1500), false);
  });

  it('TLS: rediss:// with REDIS_TLS_CA_FILE, or REDIS_TLS=1; a server the CA did not sign is refused', async function () {
    if (!hasOpenssl()) this.skip(); // no openssl: no certificate to test with
    const ca = await throwawayCa(dir.path);
    const tlsPort = await freePort();
    const tlsArgs = ['--tls-port', String(tlsPort), '--tls-cert-file', ca.certFile, '--tls-key-file', ca.keyFile];
    tlsArgs.push('--tls-ca-cert-file', ca.caFile, '--tls-auth-clients', 'no', '--requirepass', 'tls-secret');
    let redis: RedisServer;
    try {
      redis = await start(tlsArgs);
    } catch (err: unknown) {
      // A redis-server built without TLS refuses the options at start.
      if (/tls/i.test(String(err))) this.skip();
      throw err;
    }
    assert.ok(redis.port > 0);
    const base = { REDIS_PASSWORD: 'tls-secret', REDIS_TLS_CA_FILE: ca.caFile };
    assert.equal(await serves({ ...base, REDIS_URL: `rediss://127.0.0.1:${tlsPort}` }), true);
    assert.equal(await serves({ ...base, REDIS_URL: `redis://127.0.0.1:${tlsPort}`, REDIS_TLS: '1' }), true);
    // The system's CAs do not know the throwaway one.
    assert.equal(
      await serves({ REDIS_PASSWORD: 'tls-secret', REDIS_URL: `rediss://127.0.0.1:${tlsPort}` }, 1500),
      false,
    );
  });
});

function hasOpenssl(): boolean {
  return spawnSync('openssl', ['version']).status === 0;
}

/** A CA and a server certificate for 127.0.0.1 signed by it, valid for a day, in `dir`. */
async function throwawayCa(dir: string): Promise<{ caFile: string; certFile: string; keyFile: string }> {
  const run = promisify(execFile);
  const at = (name: string) => join(dir, name);
  await run(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('ca.key')].concat([
      '-out',
      at('ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=gateway test CA',
    ]),
  );
  await run(
    'openssl',
    ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('server.key')].concat([
      '-out',
      at('server.csr'),
      '-subj',
      '/CN=127.0.0.1',
    ]),
  );
  await writeFile(at('server.ext'), 'subjectAltName=IP:127.0.0.1\n');
  await run(
    'openssl',
    ['x509', '-req', '-in', at('server.csr'), '-CA', at('ca.crt'), '-CAkey', at('ca.key')].concat([
      '-CAcreateserial',
      '-out',
      at('server.crt'),
      '-days',
      '1',
      '-extfile',
      at('server.ext'),
    ]),
  );
  return { caFile: at('ca.crt'), certFile: at('server.crt'), keyFile: at('server.key') };
}
