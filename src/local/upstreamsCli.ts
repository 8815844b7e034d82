import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../config.js';
import { loadKeyCliConfig } from './keysCli.js';
import { type LocalUpstreams, startLocalUpstreams } from './startLocalUpstreams.js';

/**
 * `npm run upstreams`: only the embedded stand-in for both upstreams, for a fleet of gateways
 * on one machine sharing one platform and one key service (each `npm start` without upstream
 * URLs would start its own, with its own keys). Prints what the gateways need, in dotenv form,
 * and the demo key, then serves until SIGTERM or SIGINT. Keys: `npm run keys` on the same
 * LOCAL_DATA_DIR.
 */
export function upstreamsLines(
  upstreams: Pick<LocalUpstreams, 'platform' | 'keyService' | 'demoKey' | 'demoKeyActive'>,
) {
  const lines = [
    `PLATFORM_GRAPHQL_URL=${upstreams.platform.url}`,
    `PLATFORM_TOKEN=${upstreams.platform.token}`,
    `KEY_SERVICE_URL=${upstreams.keyService.url}`,
    `KEY_SERVICE_TOKEN=${upstreams.keyService.token}`,
  ];
  if (upstreams.demoKeyActive)
    lines.push('# The demo key (organization org_demo, plan pro):', `DEMO_KEY=${upstreams.demoKey}`);
  else
    lines.push('# The demo key was revoked or has expired: npm run keys -- create --org org_demo --name "my script"');
  return lines;
}

async function main(): Promise<number> {
  let localDataDir: string;
  try {
    ({ localDataDir } = loadKeyCliConfig());
  } catch (err: unknown) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return 2;
  }
  const upstreams = await startLocalUpstreams({ dataDir: localDataDir });
  process.stdout.write(`${upstreamsLines(upstreams).join('\n')}\n`);
  // Handlers stay: a signal to the process group reaches it twice (directly and through npm), and
  // the second must not end it by default before the key service has let go of its data directory.
  const signal = await new Promise<NodeJS.Signals>((done) => {
    process.on('SIGTERM', done);
    process.on('SIGINT', done);
  });
  process.stderr.write(`upstreams: ${signal}, stopping\n`);
  await upstreams.close();
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main().catch((err: unknown) => {
    process.stderr.write(`upstreams: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  });
}
