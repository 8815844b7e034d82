import { type Config, ConfigError, loadConfig } from './config.js';
import { startGateway } from './gateway.js';
import { answerDraining } from './http/createHttpServer.js';
import { installShutdown } from './lifecycle/shutdown.js';
import { createLogger } from './logger.js';
import { startBanner } from './startBanner.js';
import { startupFailureLine } from './startupFailure.js';

// read config → tracing (when configured) → build services → listen → shut down cleanly on SIGTERM/SIGINT.

/** Every failure to start that the operator can fix (configuration, port, folder) exits with 2. */
function cannotStart(line: string): never {
  process.stderr.write(`${line}\n`);
  process.exit(2);
}

let config: Config;
try {
  config = loadConfig();
} catch (err: unknown) {
  if (err instanceof ConfigError) cannotStart(err.message);
  throw err;
}
// Loaded only when configured: without OTEL_* variables the SDK is never imported.
const tracing = config.tracing
  ? await (await import('./telemetry/startTracing.js')).startTracing(config.tracing)
  : null;
const logger = createLogger(config.logLevel, { traceIds: tracing !== null });
const gateway = await startGateway(config, logger).catch((err: unknown) => {
  const line = startupFailureLine(err, config);
  if (line !== null) cannotStart(line);
  throw err;
});
installShutdown({
  server: gateway.server,
  // Tracing last: spans of the final usage flush are exported too.
  closers: tracing ? [...gateway.closers, () => tracing.shutdown()] : gateway.closers,
  logger,
  answerUnfinished: answerDraining,
  delayMs: config.shutdownDelayMs,
  onDraining: gateway.readiness.draining,
});
// stdout holds only JSON lines, for a log shipper; the banner is for a person, on stderr.
logger.info({ url: gateway.url, adminUrl: gateway.adminUrl, embeddedUpstreams: gateway.local !== null }, 'listening');
logger.flush();
process.stderr.write(startBanner(gateway));
