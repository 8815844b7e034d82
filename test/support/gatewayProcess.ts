import { fileURLToPath } from 'node:url';
import { childEnvironment } from './childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from './processGroup.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface GatewayProcess {
  readonly group: ProcessGroup;
  /** The public listener, e.g. http://127.0.0.1:40123. */
  readonly url: string;
  readonly port: number;
  /** The admin listener (health, readiness, metrics). */
  readonly adminUrl: string;
  readonly adminPort: number;
}

/** `src/main.ts` as `npm start` runs it, in its own process group, with the test environment plus `env` (and `preloads`, imported first). */
export function spawnGateway(env: Record<string, string>, preloads: readonly string[] = []): ProcessGroup {
  const imports = preloads.flatMap((preload) => ['--import', preload]);
  return startProcessGroup(process.execPath, ['--import', 'tsx', ...imports, 'src/main.ts'], {
    cwd: REPO_ROOT,
    env: childEnvironment(env),
  });
}

/** dist/main.js as `npm start` runs it (dist/ built first): the shipped code, for its figures of memory. */
export function spawnCompiledGateway(env: Record<string, string>): ProcessGroup {
  return startProcessGroup(process.execPath, ['--enable-source-maps', '--heap-growing-percent=50', 'dist/main.js'], {
    cwd: REPO_ROOT,
    env: childEnvironment(env),
  });
}

/** The variables that point a gateway at a platform double (`platformUrl`, its origin) and a key-service double. */
export function upstreamEnv(platformUrl: string, keyService: { url: string; token: string }): Record<string, string> {
  return {
    PLATFORM_GRAPHQL_URL: `${platformUrl}/graphql`,
    PLATFORM_TOKEN: 'platform-token',
    KEY_SERVICE_URL: keyService.url,
    KEY_SERVICE_TOKEN: keyService.token,
  };
}

/**
 * A gateway process (`src/main.ts`, as `npm start` runs it) on loopback, its public and admin
 * listeners on ports the system picks (no race with other processes for a port chosen
 * beforehand), both read from its banner.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  preloads: readonly string[] = [],
  spawn: (env: Record<string, string>) => ProcessGroup = (all) => spawnGateway(all, preloads),
): Promise<GatewayProcess> {
  const group = spawn({ HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', ...env });
  let banner: RegExpExecArray;
  try {
    banner = await group.waitForOutput(
      /Gateway listening on (http:\/\/[\d.]+:(\d+))\n[\s\S]*?Health, readiness, metrics: (http:\/\/[\d.]+:(\d+))\n/,
      60_000,
      'stderr',
    );
  } catch (err: unknown) {
    await group.destroy();
    throw err;
  }
  const [, url = '', port = '', adminUrl = '', adminPort = ''] = banner;
  return { group, url, port: Number(port), adminUrl, adminPort: Number(adminPort) };
}
