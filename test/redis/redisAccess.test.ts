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
      if (/tls/i.test(String(err))) this.skip(); // a redis-server built without TLS refuses the options at start
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

  /** TLS server options for a redis-server or sentinel: the throwaway CA's certificate, on `tlsPort`. */
  const tlsServerArgs = (ca: Awaited<ReturnType<typeof throwawayCa>>, tlsPort: number): string[] =>
    ['--tls-port', String(tlsPort), '--tls-cert-file', ca.certFile, '--tls-key-file', ca.keyFile].concat([
      '--tls-ca-cert-file',
      ca.caFile,
      '--tls-auth-clients',
      'no',
    ]);
  /** Starts a TLS server, or skips the test when redis-server was built without TLS. */
  const startTls = async (context: Mocha.Context, args: string[], configFile?: string): Promise<RedisServer> => {
    try {
      const server = await startRedisServer({ args, ...(configFile === undefined ? {} : { configFile }) });
      servers.push(server);
      return server;
    } catch (err: unknown) {
      if (/tls/i.test(String(err))) context.skip(); // this redis-server has no TLS: nothing to test it against
      throw err;
    }
  };

  // The plain port each server keeps is only for the test helpers' start check: the gateway is given TLS ports alone.
  it('TLS through sentinels: REDIS_SENTINELS with REDIS_TLS=1 and REDIS_TLS_CA_FILE; without the CA, refused', async function () {
    if (!hasOpenssl()) this.skip(); // no openssl: no certificate to test with
    const ca = await throwawayCa(dir.path);
    const masterTlsPort = await freePort();
    await startTls(this, tlsServerArgs(ca, masterTlsPort));
    const sentinelTlsPort = await freePort();
    const configFile = join(dir.path, 'tls-sentinel.conf');
    // The sentinel talks TLS to the master (tls-replication) and listens for TLS itself.
    await writeFile(configFile, `sentinel monitor tlsmaster 127.0.0.1 ${masterTlsPort} 1\ntls-replication yes\n`);
    await startTls(this, ['--sentinel', ...tlsServerArgs(ca, sentinelTlsPort)], configFile);
    const env = { REDIS_SENTINELS: `127.0.0.1:${sentinelTlsPort}`, REDIS_SENTINEL_NAME: 'tlsmaster', REDIS_TLS: '1' };
    assert.equal(await serves({ ...env, REDIS_TLS_CA_FILE: ca.caFile }), true);
    assert.equal(await serves(env, 1500), false);
  });

  it('TLS in a cluster: REDIS_CLUSTER_NODES with REDIS_TLS_CA_FILE serves keys in different slots', async function () {
    if (!hasOpenssl()) this.skip(); // no openssl: no certificate to test with
    const ca = await throwawayCa(dir.path);
    const tlsPorts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const tlsPort = await freePort();
      const args = ['--cluster-enabled', 'yes', '--cluster-port', String(await freePort()), '--tls-cluster', 'yes'];
      args.push('--cluster-config-file', join(dir.path, `tls-nodes-${tlsPort}.conf`), ...tlsServerArgs(ca, tlsPort));
      await startTls(this, args);
      tlsPorts.push(tlsPort);
    }
    const create = ['--tls', '--cacert', ca.caFile, '--cluster', 'create'];
    await promisify(execFile)(
      'redis-cli',
      [...create, ...tlsPorts.map((port) => `127.0.0.1:${port}`), '--cluster-yes'],
      {
        timeout: 15_000,
      },
    );
    const target = loadConfig({
      REDIS_CLUSTER_NODES: tlsPorts.map((port) => `127.0.0.1:${port}`).join(','),
      REDIS_TLS_CA_FILE: ca.caFile,
    }).redis;
    assert.ok(target);
    const connection = connectRedis(target, silent);
    connections.push(connection);
    await eventually('cluster ready', () => redisReady(connection), 15_000);
    const keys = ['tls:a', 'tls:b', 'tls:c', 'tls:d', 'tls:e', 'tls:f'];
    // Until every node has taken in the new configuration, a command may meet CLUSTERDOWN: a few tries, bounded.
    for (let attempt = 1; ; attempt++) {
      const written = await Promise.all(keys.map((key) => connection.set(key, key))).then(
        () => true,
        (err: unknown) => {
          if (attempt >= 50) throw err;
          return false;
        },
      );
      if (written) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const slots = await Promise.all(keys.map((key) => connection.call('CLUSTER', 'KEYSLOT', key)));
    const owners = await connection.call('CLUSTER', 'SHARDS');
    assert.ok(Array.isArray(owners) && owners.length === 3);
    assert.ok(new Set(slots).size > 1);
    assert.deepEqual(await Promise.all(keys.map((key) => connection.get(key))), keys);
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
