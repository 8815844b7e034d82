import { createServer } from 'node:net';
import { EnvSchema } from '../../src/config.js';

/**
 * The environment of a gateway process a test starts "as a newcomer would": the test
 * runner's own (PATH, HOME, npm's settings) with none of the gateway's configuration
 * variables, plus exactly the ones the test gives. The one place tests copy the
 * environment for a child process.
 */

/** A variable the gateway reads (src/config.ts), or one the OpenTelemetry SDK reads for it. */
function isGatewayVariable(name: string): boolean {
  return name in EnvSchema.shape || name.startsWith('OTEL_');
}

export function childEnvironment(set: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && !isGatewayVariable(name)) env[name] = value;
  }
  return { ...env, ...set };
}

/** A loopback port nothing listens on right now (the OS picked it). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}
