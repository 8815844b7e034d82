import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { RedisTarget } from '../config.js';
import { withDeadline } from '../upstream/deadline.js';

/** The gateway's one shared Redis connection: a single server (direct or through sentinels) or a cluster. */
export type RedisConnection = Redis | Cluster;

/** Every Redis call on the request path answers within this or fails (withinCommandTimeout): a 503 beats a hang. */
export const REDIS_COMMAND_TIMEOUT_MS = 200;

/**
 * A call on the request path: its answer, or a refusal REDIS_COMMAND_TIMEOUT_MS after it was made (ioredis's
 * commandTimeout starts only once auto-pipelining writes it). The command is not withdrawn: it may still run later.
 */
export function withinCommandTimeout<T>(call: () => Promise<T>): Promise<T> {
  return withDeadline(REDIS_COMMAND_TIMEOUT_MS, call, 'redis command');
}

/** Reconnect (or ask the sentinels, or the cluster, again) soon, and every 500 ms at most once down. */
const reconnectDelay = (attempt: number): number => Math.min(50 * attempt, 500);

/**
 * A request never waits for Redis: a command sent while disconnected, or in flight when the connection drops,
 * fails at once and is never replayed (it would count a request long answered); a Redis that stops answering is
 * dropped and reconnected. Auto-pipelining: one event-loop turn's commands share one write.
 */
const SERVER_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  // For calls off the request path. ioredis refuses in the timers phase, before the socket is read: far past
  // withinCommandTimeout's, so that a reply which arrived while the event loop was starved still wins there.
  commandTimeout: 10 * REDIS_COMMAND_TIMEOUT_MS,
  socketTimeout: 1000,
  connectTimeout: 1000,
  enableAutoPipelining: true,
  retryStrategy: reconnectDelay,
} satisfies RedisOptions;

/**
 * The connection `target` names, shared by admission and usage; whoever builds it closes it (closeRedis).
 * Sentinels: a planned failover leaves the old master taking writes it later drops, so the gateway follows
 * `+switch-master` itself (ioredis's failoverDetector ends the client for good when a switch arrives while it
 * asks the sentinels); a demoted master's READONLY reconnects too. Cluster: each script's keys share one hash tag.
 */
export function connectRedis(target: RedisTarget, logger: Logger): RedisConnection {
  const connection = build(target);
  if (target.kind === 'sentinel' && connection instanceof Redis)
    followers.set(connection, followFailovers(target, connection, logger));
  let lost = false;
  connection.on('error', (err: unknown) => {
    if (!closing.has(connection)) logger.debug({ err }, 'redis connection error');
  });
  connection.on('close', () => {
    if (closing.has(connection) || lost) return;
    lost = true;
    logger.warn('redis is unreachable: what needs it answers 503 until it is back');
  });
  connection.on('ready', () => {
    if (!lost) return;
    lost = false;
    logger.info('redis answers again');
  });
  return connection;
}

/** Connections closed on purpose: their 'close' is no outage to report. */
const closing = new WeakSet<RedisConnection>();

/** How long after a +switch-master a connection insists on the address announced. */
const FOLLOW_CHECK_MS = 2000;

/** The sentinel subscriptions of a connection through sentinels. */
const followers = new WeakMap<RedisConnection, readonly Redis[]>();

/** Closes the connection at once: QUIT would wait for a Redis that may be gone. */
export function closeRedis(connection: RedisConnection): void {
  closing.add(connection);
  for (const follower of followers.get(connection) ?? []) follower.disconnect();
  connection.disconnect();
}

/**
 * On a `+switch-master` for this group the connection reconnects at once, and again on a `ready` elsewhere for
 * FOLLOW_CHECK_MS (a sentinel may not know yet); past it any address is taken, so NAT never keeps it cycling.
 */
function followFailovers(
  target: Extract<RedisTarget, { kind: 'sentinel' }>,
  connection: Redis,
  logger: Logger,
): Redis[] {
  let announced: string | null = null;
  let announcedAt = 0;
  const connectedTo = () => `${connection.stream?.remoteAddress ?? ''}:${connection.stream?.remotePort ?? ''}`;
  connection.on('ready', () => {
    if (announced === null) return;
    if (connectedTo() === announced || performance.now() - announcedAt > FOLLOW_CHECK_MS) announced = null;
    else connection.disconnect(true);
  });
  return target.sentinels.map(({ host, port }) => {
    const sentinel = new Redis({
      host,
      port,
      ...(target.sentinelPassword === undefined ? {} : { password: target.sentinelPassword }),
      ...(target.tls === undefined ? {} : { tls: tlsOptions(target.tls) }),
      retryStrategy: reconnectDelay,
      connectTimeout: SERVER_OPTIONS.connectTimeout,
    });
    sentinel.on('error', (err: unknown) => logger.debug({ err }, 'sentinel subscription error'));
    sentinel.on('message', (_channel: string, message: string) => {
      // `<group> <old ip> <old port> <new ip> <new port>`
      const [group, , , newHost, newPort] = message.split(' ');
      if (group !== target.name || newHost === undefined || newPort === undefined) return;
      const next = `${newHost}:${newPort}`;
      if (next === announced || next === connectedTo()) return;
      announced = next;
      announcedAt = performance.now();
      // Only a connection that is up is cut: one still (re)connecting asks the sentinels anyway, and
      // cutting it mid-connect ends the client for good (the ioredis flaw noted above); its 'ready' is checked.
      if (connection.status !== 'ready') return;
      logger.info('redis master switched: reconnecting to the new one');
      connection.disconnect(true);
    });
    sentinel.subscribe('+switch-master').catch((err: unknown) => logger.debug({ err }, 'sentinel subscription error'));
    return sentinel;
  });
}

/** True while commands can be sent (connected, and for a cluster, its slots known). */
export function redisReady(connection: RedisConnection): boolean {
  return connection.status === 'ready';
}

function build(target: RedisTarget): RedisConnection {
  // Credentials and TLS for every server; a URL's own credentials come first (ioredis reads the URL first).
  const access = {
    ...(target.username === undefined ? {} : { username: target.username }),
    ...(target.password === undefined ? {} : { password: target.password }),
    ...(target.tls === undefined ? {} : { tls: tlsOptions(target.tls) }),
  } satisfies RedisOptions;
  switch (target.kind) {
    case 'server':
      return new Redis(target.url, { ...SERVER_OPTIONS, ...access });
    case 'sentinel':
      return new Redis({
        ...SERVER_OPTIONS,
        ...access,
        sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
        name: target.name,
        ...(target.sentinelPassword === undefined ? {} : { sentinelPassword: target.sentinelPassword }),
        ...(target.tls === undefined ? {} : { enableTLSForSentinelMode: true, sentinelTLS: tlsOptions(target.tls) }),
        reconnectOnError: (err: Error) => err.message.startsWith('READONLY'),
        sentinelRetryStrategy: reconnectDelay,
      });
    case 'cluster':
      return new Cluster(
        target.nodes.map(({ host, port }) => ({ host, port })),
        {
          enableOfflineQueue: false,
          enableAutoPipelining: true,
          clusterRetryStrategy: reconnectDelay,
          // A moved slot is followed at once; a node failing over is retried a few times within the command timeout.
          retryDelayOnMoved: 0,
          retryDelayOnFailover: 50,
          retryDelayOnClusterDown: 50,
          redisOptions: { ...SERVER_OPTIONS, ...access },
        },
      );
  }
}

/** The CA given, or the system's; the server's name is checked against its certificate. */
function tlsOptions(tls: NonNullable<RedisTarget['tls']>): ConnectionOptions {
  return tls.ca === undefined ? {} : { ca: tls.ca };
}
