import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';
import { keyChecksum } from '../../src/auth/keyChecksum.js';

/**
 * Bench child of the flood scenario: the anonymous clients, in a process of their own so
 * that making the flood does not slow the paying callers' side of the measurement.
 * argv: gateway URL, path, 'one' or 'many' addresses, connections, seconds.
 * Prints one JSON line: requests sent and answers by status.
 */

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** A key anyone can make: the public form and checksum, random otherwise. */
function madeUpKey(): string {
  const random = [...randomBytes(32)].map((byte) => BASE62[byte % 62]).join('');
  return `atl_${random}${keyChecksum(random)}`;
}

function ask(agent: Agent, url: string, key: string, forwardedFor: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(
      url,
      { agent, headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': forwardedFor } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.end();
  });
}

async function main(): Promise<void> {
  const [gatewayUrl, path, addresses, connections, seconds] = process.argv.slice(2);
  if (!gatewayUrl || !path || (addresses !== 'one' && addresses !== 'many'))
    throw new Error('usage: floodClients.ts <url> <path> one|many <connections> <seconds>');
  const endsAt = performance.now() + Number(seconds) * 1000;
  const agent = new Agent({ keepAlive: true, maxSockets: Number(connections) });
  const statuses: Record<string, number> = {};
  let sent = 0;
  const client = async (index: number) => {
    for (let round = 0; performance.now() < endsAt; round += 1) {
      const from = addresses === 'one' ? '198.51.100.7' : `10.${index % 250}.${(round >> 8) % 250}.${round % 250}`;
      const status = await ask(agent, `${gatewayUrl}${path}`, madeUpKey(), from);
      sent += 1;
      statuses[status] = (statuses[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: Number(connections) }, (_, i) => client(i)));
  agent.destroy();
  process.stdout.write(`${JSON.stringify({ sent, statuses })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
