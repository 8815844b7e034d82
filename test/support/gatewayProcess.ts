import { fileURLToPath } from 'node:url';
import { childEnvironment, freePort } from './childEnvironment.js';
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

/** A gateway process (`src/main.ts`, as `npm start` runs it) on loopback: the public listener and the admin one, on the ports given or free ones. */
export async function startGatewayProcess(
  env: Record<string, string>,
  ports: { port?: number; adminPort?: number } = {},
): Promise<GatewayProcess> {
  const port = ports.port ?? (await freePort());
  const adminPort = ports.adminPort ?? (await freePort());
  const group = startProcessGroup(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: REPO_ROOT,
    env: childEnvironment({ HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: String(adminPort), ...env }),
  });
  try {
    await group.waitForOutput(/Gateway listening on/, 60_000, 'stderr');
  } catch (err: unknown) {
    await group.destroy();
    throw err;
  }
  return {
    group,
    url: `http://127.0.0.1:${port}`,
    port,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    adminPort,
  };
}
