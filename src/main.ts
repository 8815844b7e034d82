import { type Config, ConfigError, loadConfig } from './config.js';
import { startGateway } from './gateway.js';
import { answerDraining } from './http/createHttpServer.js';
import { installShutdown } from './lifecycle/shutdown.js';
import { createLogger } from './logger.js';
import { startBanner } from './startBanner.js';
import { startupFailureLine } from './startupFailure.js';
import type { Tracing } from './telemetry/startTracing.js';

/** The exit code of every failure to start that the operator can fix (configuration, port, folder). */
const EXIT_CANNOT_START = 2;

/** read config → tracing (when configured) → build services → listen → shut down cleanly on SIGTERM/SIGINT. */
async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err: unknown) {
    if (err instanceof ConfigError) cannotStart(err.message);
    throw err;
  }
  // Loaded only when configured: without OTEL_* variables the SDK is never imported.
  const tracing: Tracing | null = config.tracing
    ? await (await import('./telemetry/startTracing.js')).startTracing(config.tracing)
    : null;
  const logger = createLogger(config.logLevel, { traceIds: tracing !== null });
  let gateway;
  try {
    gateway = await startGateway(config, logger);
  } catch (err: unknown) {
    const line = startupFailureLine(err, config);
    if (line !== null) cannotStart(line);
    throw err;
  }
  // Last: spans of the final usage flush are exported too.
  const closers = tracing ? [...gateway.closers, () => tracing.shutdown()] : gateway.closers;
  installShutdown({
    server: gateway.server,
    closers,
    logger,
    answerUnfinished: answerDraining,
    delayMs: config.shutdownDelayMs,
    onDraining: gateway.readiness.draining,
  });
  // stdout holds only JSON lines, for a log shipper; the banner is for a person, on stderr.
  logger.info({ url: gateway.url, adminUrl: gateway.adminUrl, embeddedUpstreams: gateway.local !== null }, 'listening');
  logger.flush();
  process.stderr.write(startBanner(gateway));
}

function cannotStart(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(EXIT_CANNOT_START);
}

await main();
