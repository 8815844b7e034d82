import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPlatformExecutor, type GraphQLRequestBody } from '../../src/local/localPlatform.js';
import type { PlatformData } from '../../src/local/seedData.js';

/**
 * The local platform's GraphQL executor behind a server that can hold its answers: while
 * held, requests are received and wait until `release()`, so a test knows exactly which
 * gateway requests are in flight when it signals the gateway.
 */

export const HELD_PLATFORM_TOKEN = 'e2e-platform-token';

export interface HeldPlatform {
  /** The GraphQL endpoint. */
  readonly url: string;
  readonly token: string;
  /** Requests waiting for release() right now. */
  held(): number;
  hold(): void;
  /** Answers every held request, and the ones after it at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldPlatform(data: PlatformData): Promise<HeldPlatform> {
  const executor = createPlatformExecutor(data);
  let holding = false;
  const waiting: Array<() => void> = [];

  const server = createServer((req, res) => {
    void (async () => {
      if (req.headers.authorization !== `Bearer ${HELD_PLATFORM_TOKEN}`) {
        res.writeHead(401).end();
        return;
      }
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (holding) await new Promise<void>((resolve) => waiting.push(resolve));
      const result = executor.execute(JSON.parse(Buffer.concat(chunks).toString('utf8')) as GraphQLRequestBody);
      const answer = {
        data: result.data,
        ...(result.errors && result.errors.length > 0 ? { errors: result.errors.map((error) => error.toJSON()) } : {}),
      };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const release = () => {
    holding = false;
    for (const resume of waiting.splice(0)) resume();
  };
  return {
    url: `http://127.0.0.1:${port}/graphql`,
    token: HELD_PLATFORM_TOKEN,
    held: () => waiting.length,
    hold() {
      holding = true;
    },
    release,
    close() {
      release();
      server.closeAllConnections();
      return new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}
