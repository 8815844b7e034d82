import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, type RedisServer, startRedisServer } from './redisServer.js';
import { tempDir } from './tempDir.js';

/**
 * Private Redis topologies for failover tests, on free loopback ports: a master with a
 * replica watched by two sentinels, and a three-node cluster. Timeouts are short so a
 * failover takes about a second.
 */
export interface SentinelSet {
  readonly name: string;
  readonly master: RedisServer;
  readonly replica: RedisServer;
  readonly sentinels: readonly RedisServer[];
  stop(): Promise<void>;
}

export const SENTINEL_MASTER_NAME = 'gatewaymaster';

/** `password`: the master's and replica's (requirepass, masterauth); `sentinelPassword`: the sentinels' own. */
export async function startSentinelSet(
  options: { password?: string; sentinelPassword?: string } = {},
): Promise<SentinelSet> {
  const { password, sentinelPassword } = options;
  const auth = password === undefined ? [] : ['--requirepass', password, '--masterauth', password];
  const dir = await tempDir('gateway-sentinel-');
  const started: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(started.map((server) => server.stop()));
    await dir.remove();
  };
  try {
    // Replication writes RDB files: each server into its own temporary folder, not the working directory.
    const [masterDir, replicaDir] = [join(dir.path, 'master'), join(dir.path, 'replica')];
    await Promise.all([mkdir(masterDir), mkdir(replicaDir)]);
    const master = await startRedisServer({ args: ['--dir', masterDir, ...auth] });
    started.push(master);
    const replica = await startRedisServer({
      args: ['--dir', replicaDir, '--replicaof', '127.0.0.1', String(master.port), ...auth],
    });
    started.push(replica);
    await waitFor(
      () => info(replica.port, 'replication', password),
      (text) => text.includes('master_link_status:up'),
    );
    const sentinels: RedisServer[] = [];
    for (let i = 0; i < 2; i++) {
      // A sentinel rewrites its configuration file: each gets its own.
      const configFile = join(dir.path, `sentinel-${i}.conf`);
      await writeFile(
        configFile,
        [
          `sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master.port} 1`,
          `sentinel down-after-milliseconds ${SENTINEL_MASTER_NAME} 500`,
          `sentinel failover-timeout ${SENTINEL_MASTER_NAME} 2000`,
          ...(password === undefined ? [] : [`sentinel auth-pass ${SENTINEL_MASTER_NAME} ${password}`]),
          ...(sentinelPassword === undefined ? [] : [`requirepass ${sentinelPassword}`]),
          '',
        ].join('\n'),
      );
      const sentinel = await startRedisServer({ configFile, args: ['--sentinel'] });
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    // Both sentinels know the replica, so either can promote it.
    for (const sentinel of sentinels) {
      await waitFor(
        () =>
          withClient(
            sentinel.port,
            (client) => client.call('SENTINEL', 'REPLICAS', SENTINEL_MASTER_NAME),
            sentinelPassword,
          ),
        (replicas) => Array.isArray(replicas) && replicas.length === 1,
      );
    }
    return { name: SENTINEL_MASTER_NAME, master, replica, sentinels, stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}

/** When a sentinel of `set` first announced a new master (+switch-master) since the watch began or was reset. */
export interface MasterSwitchWatch {
  readonly switchedAt: number | null;
  reset(): void;
  close(): void;
}

export async function watchMasterSwitch(set: SentinelSet): Promise<MasterSwitchWatch> {
  let switchedAt: number | null = null;
  const watchers = set.sentinels.map((sentinel) => new Redis({ port: sentinel.port, host: '127.0.0.1' }));
  for (const watcher of watchers) {
    await watcher.subscribe('+switch-master');
    // The first sentinel to announce it: the other learns it a little later.
    watcher.on('message', () => {
      switchedAt ??= Date.now();
    });
  }
  return {
    get switchedAt() {
      return switchedAt;
    },
    reset() {
      switchedAt = null;
    },
    close() {
      for (const watcher of watchers) watcher.disconnect();
    },
  };
}

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  stop(): Promise<void>;
}

/** Three masters sharing the 16384 slots (no replicas), created with redis-cli --cluster create. */
export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await tempDir('gateway-cluster-');
  const nodes: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((node) => node.stop()));
    await dir.remove();
  };
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      // The cluster bus gets its own free port: the default (port + 10000) may be taken or out of range.
      const busPort = await freePort();
      const args = ['--cluster-enabled', 'yes', '--cluster-port', String(busPort), '--cluster-node-timeout', '1000'];
      args.push('--cluster-config-file', join(dir.path, `nodes-${port}.conf`));
      nodes.push(await startRedisServer({ port, args }));
    }
    await promisify(execFile)('redis-cli', [
      '--cluster',
      'create',
      ...nodes.map((node) => `127.0.0.1:${node.port}`),
      '--cluster-yes',
    ]);
    for (const node of nodes) {
      await waitFor(
        () => withClient(node.port, (client) => client.call('CLUSTER', 'INFO')),
        (text) => typeof text === 'string' && text.includes('cluster_state:ok'),
      );
    }
    return { nodes, stop };
  } catch (err: unknown) {
    await stop();
    throw err;
  }
}

/** One command on a short-lived admin connection (with the server's password, when it has one). */
export async function withClient<T>(port: number, use: (client: Redis) => Promise<T>, password?: string): Promise<T> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    ...(password === undefined ? {} : { password }),
  });
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

function info(port: number, section: string, password?: string): Promise<string> {
  return withClient(port, (client) => client.info(section), password);
}

async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, withinMs = 15_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read().catch(() => undefined);
    if (value !== undefined && done(value)) return;
    if (Date.now() > deadline) throw new Error(`redis topology not ready within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
