import { fileURLToPath } from 'node:url';
import { childEnvironment } from './childEnvironment.js';
import { type ProcessGroup, startProcessGroup } from './processGroup.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface UpstreamsProcess {
  readonly group: ProcessGroup;
  /** The four variables a gateway needs to use them, as printed. */
  readonly gatewayEnv: Record<string, string>;
  readonly demoKey: string;
}

/** `npm run upstreams` on `dataDir`, as an operator starts it for a fleet on one machine; resolves once it printed what the gateways need. */
export async function startUpstreamsProcess(dataDir: string): Promise<UpstreamsProcess> {
  const group = startProcessGroup('npm', ['run', '--silent', 'upstreams'], {
    cwd: REPO_ROOT,
    env: childEnvironment({ LOCAL_DATA_DIR: dataDir }),
  });
  try {
    await group.waitForOutput(/^DEMO_KEY=.*\n/m, 45_000);
  } catch (err: unknown) {
    await group.destroy();
    throw err;
  }
  const printed: Record<string, string> = {};
  for (const line of group.stdout().split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line);
    if (match?.[1] !== undefined) printed[match[1]] = match[2] ?? '';
  }
  const { DEMO_KEY: demoKey = '', ...gatewayEnv } = printed;
  return { group, gatewayEnv, demoKey };
}
