import { ConfigError, loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { startGateway } from './gateway.js';
import { DataDirBusy } from './local/dataDirFiles.js';
import { installShutdown } from './lifecycle/shutdown.js';
import { startBanner } from './startBanner.js';

/** read config → build services → listen → shut down cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err: unknown) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  let gateway;
  try {
    gateway = await startGateway(config, logger);
  } catch (err: unknown) {
    if (err instanceof DataDirBusy) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  installShutdown({ server: gateway.server, closers: gateway.closers, logger });
  process.stdout.write(startBanner(gateway));
}

await main();
