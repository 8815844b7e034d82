import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { childEnvironment, freePort } from './childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from './processGroup.js';
import { isRequired } from './testEnvironment.js';

/**
 * A real haproxy in front of gateway instances, configured as operators run it: each
 * server's readiness checked on its admin port every second, out after 2 failures, in
 * after 1 success, and no retries or redispatch (a stock balancer without L7 retries).
 */
export interface Balancer {
  readonly url: string;
  /** Points a server slot at an instance (haproxy's runtime API), as an orchestrator does for a replacement. */
  place(name: string, server: { port: number; adminPort: number }): Promise<void>;
  /** Each server's state by name (`UP`, `DOWN`, ...), from haproxy's stats socket. */
  states(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

export interface BalancedServer {
  readonly name: string;
  /** Where it serves and where its readiness is checked; absent: an empty slot (nothing listens there). */
  readonly port?: number;
  readonly adminPort?: number;
}

/** An address where nothing listens: an empty slot's checks fail until it is placed. */
const NOWHERE = 1;

/** Debian installs it in /usr/sbin, which a user's PATH may leave out. */
const HAPROXY = ['haproxy', '/usr/sbin/haproxy'].find((command) => {
  const probe = spawnSync(command, ['-v'], { stdio: 'ignore' });
  return probe.error === undefined && probe.status === 0;
});

export function haproxyInstalled(): boolean {
  return HAPROXY !== undefined;
}

/** Skips the suite loudly without haproxy, or fails it when REQUIRE_HAPROXY=1 (CI). */
export function skipWithoutHaproxy(context: Mocha.Context): void {
  if (haproxyInstalled()) return;
  if (isRequired('REQUIRE_HAPROXY')) throw new Error('haproxy is not installed, and REQUIRE_HAPROXY=1 demands it');
  console.warn('\n  !!! haproxy is not installed: SKIPPING the fleet tests (set REQUIRE_HAPROXY=1 to fail instead)\n');
  context.skip(); // only where haproxy is missing and CI did not demand it (REQUIRE_HAPROXY)
}

export async function startBalancer(dir: string, servers: readonly BalancedServer[]): Promise<Balancer> {
  const port = await freePort();
  const socket = join(dir, 'haproxy.sock');
  const config = join(dir, 'haproxy.cfg');
  await writeFile(
    config,
    [
      'global',
      `  stats socket ${socket} level admin`,
      'defaults',
      '  mode http',
      '  retries 0',
      '  timeout connect 1s',
      '  timeout client 30s',
      '  timeout server 30s',
      '  timeout check 1s',
      'frontend api',
      `  bind 127.0.0.1:${port}`,
      '  option forwardfor',
      '  default_backend gateways',
      'backend gateways',
      '  balance roundrobin',
      '  option httpchk GET /readyz',
      '  http-check expect status 200',
      '  default-server inter 1s fall 2 rise 1',
      ...servers.map(
        (server) =>
          `  server ${server.name} 127.0.0.1:${server.port ?? NOWHERE} check port ${server.adminPort ?? NOWHERE}`,
      ),
      '',
    ].join('\n'),
  );
  const group: ProcessGroup = startProcessGroup(HAPROXY ?? 'haproxy', ['-db', '-f', config], {
    cwd: dir,
    env: childEnvironment(),
  });
  const states = async (): Promise<Record<string, string>> => {
    const csv = await ask(socket, 'show stat\n');
    const result: Record<string, string> = {};
    for (const line of csv.split('\n')) {
      const [proxy, name, ...fields] = line.split(',');
      // Field 18 (0-based 17) of `show stat` is the status.
      if (proxy === 'gateways' && name !== undefined && name !== 'BACKEND') result[name] = fields[15] ?? '';
    }
    return result;
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const known = await states().catch(() => ({}));
    if (Object.keys(known).length === servers.length) break;
    if (Date.now() > deadline || group.child.exitCode !== null) {
      await group.destroy();
      throw new Error(`haproxy did not start:\n${group.stderr()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url: `http://127.0.0.1:${port}`,
    async place(name, server) {
      await ask(socket, `set server gateways/${name} addr 127.0.0.1 port ${server.port}\n`);
      await ask(socket, `set server gateways/${name} check-port ${server.adminPort}\n`);
    },
    states,
    stop: () => group.destroy(),
  };
}

/** One command on haproxy's stats socket, and its whole answer. */
function ask(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    connection.setTimeout(2000, () => connection.destroy(new Error('haproxy stats socket timed out')));
    connection.on('connect', () => connection.write(command));
    connection.on('data', (chunk: Buffer) => (answer += chunk.toString('utf8')));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
  });
}
