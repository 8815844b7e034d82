import { loadConfig } from '../../src/config.js';
import { startGateway } from '../../src/gateway.js';
import { answerDraining } from '../../src/http/createHttpServer.js';
import { installShutdown } from '../../src/lifecycle/shutdown.js';
import { createLogger } from '../../src/logger.js';
import { answerMemory, type GatewayReady, isParentMessage, reportFailure } from './childMessages.js';

/**
 * Bench child: the gateway exactly as src/main.ts runs it (config from its environment,
 * which the parent sets; pino to stdout, which the parent points at a log file; the
 * same graceful shutdown), in a process of its own so its CPU and memory are its own.
 * It tells the parent its URL over IPC and stops on `stop`, which also lets
 * --cpu-prof write its profile. The bench runs it compiled by esbuild on plain node,
 * as npm start runs dist/main.js, and once through tsx for comparison.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const tracing = config.tracing
    ? await (await import('../../src/telemetry/startTracing.js')).startTracing(config.tracing)
    : null;
  const logger = createLogger(config.logLevel, { traceIds: tracing !== null });
  const gateway = await startGateway(config, logger);
  const closers = tracing ? [...gateway.closers, () => tracing.shutdown()] : gateway.closers;
  const shutdown = installShutdown({ server: gateway.server, closers, logger, answerUnfinished: answerDraining });
  process.on('message', (message: unknown) => {
    if (!isParentMessage(message)) return;
    if (message.type === 'stop') void shutdown.shutdown('bench finished');
    else answerMemory(message);
  });
  process.on('disconnect', () => void shutdown.shutdown('bench went away'));
  const ready: GatewayReady = { type: 'ready', url: gateway.url, pid: process.pid };
  process.send?.(ready);
}

main().catch(reportFailure);
