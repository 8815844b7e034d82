import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { freePort } from './childEnvironment.js';
import { type FakeKeyService, startFakeKeyService } from './fakeKeyService.js';
import { spawnGateway, upstreamEnv } from './gatewayProcess.js';
import { testKey, verifyAnswer } from './keys.js';
import { keywordsData } from './platformAnswers.js';
import type { ProcessGroup } from './processGroup.js';

/**
 * The gateway as an operator runs it, for attacks from outside: a child process on a
 * loopback port, with a key service double (a paying key known to it) and a platform
 * double answering every query. Its memory is read from /proc, as an operator's
 * monitoring would.
 */
export interface GatewayChild {
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly process: ProcessGroup;
  readonly keyService: FakeKeyService;
  /** A key of a paying organization, known to the key service. */
  readonly payingKey: string;
  /** One paying request on a connection of its own: its status (0 when the connection failed). */
  paying(): Promise<number>;
  /** The process's resident memory now and its peak so far (VmRSS, VmHWM), in MB. */
  memoryMb(): { rss: number; peak: number };
  close(): Promise<void>;
}

export async function startGatewayChild(env: Record<string, string> = {}): Promise<GatewayChild> {
  const keyService = await startFakeKeyService();
  const payingKey = testKey('paying customer under attack');
  keyService.setAnswer(payingKey, verifyAnswer(payingKey, { usage: { ceiling: null } }));
  const platform = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: keywordsData() })),
    );
  });
  await new Promise<void>((resolve) => platform.listen(0, '127.0.0.1', resolve));
  const platformUrl = `http://127.0.0.1:${(platform.address() as AddressInfo).port}`;
  const port = await freePort();
  const group = spawnGateway({
    PORT: String(port),
    HOST: '127.0.0.1',
    ...upstreamEnv(platformUrl, keyService),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_REQUESTS: '1000000',
    CACHE_TTL_SECONDS: '0',
    ...env,
  });
  const closeDoubles = async () => {
    platform.closeAllConnections();
    await new Promise<void>((resolve) => platform.close(() => resolve()));
    await keyService.close();
  };
  try {
    await group.waitForOutput(/Gateway listening on/, 30_000, 'stderr');
  } catch (err: unknown) {
    await group.destroy();
    await closeDoubles();
    throw new Error(`${String(err)}\n${group.stderr()}`);
  }
  const url = `http://127.0.0.1:${port}`;
  const pid = group.pid;
  return {
    url,
    port,
    pid,
    process: group,
    keyService,
    payingKey,
    async paying() {
      // A fresh connection each time, as a new client's would be.
      const dispatcher = new Agent({ connections: 1, pipelining: 0 });
      try {
        const res = await request(`${url}/v1/api/keywords?site=example.com`, {
          headers: { authorization: `Bearer ${payingKey}` },
          dispatcher,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
        await res.body.arrayBuffer();
        return res.statusCode;
      } catch {
        return 0;
      } finally {
        await dispatcher.destroy();
      }
    },
    memoryMb() {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
      return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
    },
    async close() {
      await group.destroy();
      await closeDoubles();
    },
  };
}
