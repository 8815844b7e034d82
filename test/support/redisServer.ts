import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createServer, Socket } from 'node:net';
import { isRequired } from './testEnvironment.js';

/**
 * A private redis-server for one test suite, on a free loopback port: never the shared
 * instance. Tests may stop it, restart it on the same port, pause it (a "slow" Redis)
 * or flush its scripts, without touching anything another engineer uses.
 */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGKILL: the server vanishes with its data and its script cache. */
  kill(): Promise<void>;
  /** Starts a fresh server on the same port (empty data, empty script cache). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server keeps its sockets open but answers nothing. */
  pause(): void;
  resume(): void;
  /** Sends one command over a fresh connection and returns the raw reply line. */
  command(...args: string[]): Promise<string>;
  stop(): Promise<void>;
}

/** Whether Redis-backed tests must run (CI sets REQUIRE_REDIS=1). */
export function redisRequired(): boolean {
  return isRequired('REQUIRE_REDIS');
}

export function redisServerInstalled(): boolean {
  const probe = spawnSync('redis-server', ['--version'], { stdio: 'ignore' });
  return probe.error === undefined && probe.status === 0;
}

/**
 * Call at the top of a describe() that needs Redis: skips the suite loudly when
 * redis-server is missing, or fails it when REQUIRE_REDIS=1.
 */
export function skipWithoutRedis(context: Mocha.Context): void {
  if (redisServerInstalled()) return;
  if (redisRequired()) throw new Error('redis-server is not installed, and REQUIRE_REDIS=1 demands the Redis tests');
  console.warn(
    '\n  !!! redis-server is not installed: SKIPPING the Redis tests (set REQUIRE_REDIS=1 to fail instead)\n',
  );
  context.skip(); // only where redis-server is missing and CI did not demand it (REQUIRE_REDIS)
}

/**
 * Starts a private redis-server. `port` defaults to a free one; `configFile` (read first)
 * and `args` (after the defaults) make a replica, a sentinel or a cluster node of it.
 */
export async function startRedisServer(
  options: { port?: number; configFile?: string; args?: readonly string[] } = {},
): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const spawnOn = (port: number) => spawnRedis(port, options.configFile, options.args ?? []);
  let child: ChildProcess | null = await spawnOn(port);
  let paused = false;

  const stopChild = async (signal: NodeJS.Signals): Promise<void> => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    if (paused) {
      running.kill('SIGCONT');
      paused = false;
    }
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill(signal);
    await exited;
  };

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    kill: () => stopChild('SIGKILL'),
    async restart() {
      await stopChild('SIGKILL');
      child = await spawnOn(port);
    },
    pause() {
      if (child && !paused) {
        child.kill('SIGSTOP');
        paused = true;
      }
    },
    resume() {
      if (child && paused) {
        child.kill('SIGCONT');
        paused = false;
      }
    },
    command: (...args) => sendCommand(port, args),
    stop: () => stopChild('SIGKILL'),
  };
}

async function spawnRedis(
  port: number,
  configFile: string | undefined,
  args: readonly string[],
): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    [
      ...(configFile === undefined ? [] : [configFile]),
      ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes'],
      ...args,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${output.slice(-500)}`);
    try {
      // A server that requires a password answers NOAUTH: it is up all the same.
      if (/^(\+PONG|-NOAUTH)/.test(await sendCommand(port, ['PING']))) return child;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  child.kill('SIGKILL');
  throw new Error(`redis-server did not start on port ${port}: ${output.slice(-500)}`);
}

/** A free port now; redis-server binds it a moment later (a race we accept in tests). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** One RESP command over a fresh socket; resolves with the first reply line. */
function sendCommand(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = new Socket();
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('redis command timed out'));
    }, 1000);
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      const end = reply.indexOf('\r\n');
      if (end >= 0) {
        clearTimeout(timer);
        socket.destroy();
        resolve(reply.slice(0, end));
      }
    });
    socket.connect(port, '127.0.0.1', () => {
      socket.write(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);
    });
  });
}
