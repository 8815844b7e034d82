import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { keyHashOf, type VerifyAnswerJson } from './keys.js';

/**
 * A small key service on a free loopback port, speaking key-service.md: verify,
 * usage (idempotent by event id; each new event moves its organization's `used`) and the event stream (with replay after
 * Last-Event-ID). For tests that need a real stream; nock covers single calls.
 */

export const FAKE_KEY_SERVICE_TOKEN = 'key-service-token';

export interface FakeKeyService {
  readonly url: string;
  readonly token: string;
  /** Verify calls received, valid or not. */
  verifyCalls(): number;
  /** Requests refused for a missing or wrong service token. */
  unauthorizedRequests(): number;
  /** Usage events counted (each id once). */
  readonly usageEvents: Array<Record<string, unknown>>;
  /** Usage events received again after they were counted. */
  usageDuplicates(): number;
  /** Makes POST /v1/usage answer this status, counting nothing (null: count again). */
  refuseUsage(status: number | null): void;
  /** Makes POST /v1/keys/verify answer this status (null: answer again). */
  refuseVerify(status: number | null): void;
  /** Every GET /v1/events, with the Last-Event-ID it carried. */
  readonly streamRequests: Array<{ lastEventId: string | undefined }>;
  /** The headers of every request received, in order. */
  readonly requestHeaders: IncomingHttpHeaders[];
  /** Makes each verify answer after this many milliseconds (0: at once). */
  setVerifyDelay(ms: number): void;
  /** Sets what verify answers for this key's hash. */
  setAnswer(key: string, answer: VerifyAnswerJson): void;
  /** Revokes the key (revokedAt set, nothing else) and announces it on the stream. */
  revoke(key: string, at?: string): void;
  /** Sends an event to every open stream (and keeps it for replay); returns its id. */
  sendEvent(event: string, data: unknown): string;
  sendComment(text: string): void;
  /** Open event streams right now. */
  openStreams(): number;
  /** Cuts every open event stream. */
  dropStreams(): void;
  /** Keeps every open event stream open but sends nothing more on it (a silent partition). */
  stallStreams(): void;
  /** Makes GET /v1/events answer this status instead of a stream (null: stream again). */
  refuseStreams(status: number | null): void;
  close(): Promise<void>;
}

export async function startFakeKeyService(): Promise<FakeKeyService> {
  const answers = new Map<string, VerifyAnswerJson>();
  const usageIds = new Set<string>();
  const usageEvents: Array<Record<string, unknown>> = [];
  const streamRequests: Array<{ lastEventId: string | undefined }> = [];
  const streams = new Set<ServerResponse>();
  const stalled = new Set<ServerResponse>();
  const history: Array<{ id: number; text: string }> = [];
  let nextEventId = 1;
  let verifyCalls = 0;
  let unauthorizedRequests = 0;
  let streamRefusal: number | null = null;
  let usageRefusal: number | null = null;
  let verifyRefusal: number | null = null;
  let usageDuplicates = 0;
  let verifyDelayMs = 0;
  const requestHeaders: IncomingHttpHeaders[] = [];

  const server = createServer((req, res) => {
    void handle(req, res);
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requestHeaders.push(req.headers);
    if (req.headers.authorization !== `Bearer ${FAKE_KEY_SERVICE_TOKEN}`) {
      unauthorizedRequests += 1;
      res.writeHead(401).end();
      return;
    }
    if (req.method === 'GET' && req.url === '/v1/events') {
      openStream(req, res);
      return;
    }
    const body = await readJson(req);
    if (req.method === 'POST' && req.url === '/v1/keys/verify') {
      verifyCalls += 1;
      if (verifyRefusal !== null) return json(res, verifyRefusal, { error: 'unavailable' });
      const keyHash = isRecord(body) ? body.keyHash : undefined;
      if (typeof keyHash !== 'string' || !/^[0-9a-f]{64}$/.test(keyHash))
        return json(res, 400, { error: 'invalid_request' });
      if (verifyDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, verifyDelayMs));
      const answer = answers.get(keyHash);
      return answer ? json(res, 200, answer) : json(res, 404, { error: 'unknown_key' });
    }
    if (req.method === 'POST' && req.url === '/v1/usage') {
      if (usageRefusal !== null) return json(res, usageRefusal, { error: 'unavailable' });
      const events = isRecord(body) ? body.events : undefined;
      if (!Array.isArray(events) || events.length < 1 || events.length > 1000 || !events.every(isUsageEvent)) {
        return json(res, 400, { error: 'invalid_request' });
      }
      let accepted = 0;
      for (const event of events) {
        if (usageIds.has(event.id)) {
          usageDuplicates += 1;
          continue;
        }
        usageIds.add(event.id);
        usageEvents.push(event);
        accepted += 1;
        countUsage(event.organizationId);
      }
      return json(res, 200, { accepted, duplicates: events.length - accepted });
    }
    json(res, 404, { error: 'not_found' });
  }

  /** An accepted event moves the organization's `used`, as the real service's count does. */
  function countUsage(organizationId: unknown): void {
    for (const answer of answers.values()) {
      if (answer.organization.id === organizationId) answer.organization.usage.used += 1;
    }
  }

  function openStream(req: IncomingMessage, res: ServerResponse): void {
    const header = req.headers['last-event-id'];
    const lastEventId = typeof header === 'string' ? header : undefined;
    streamRequests.push({ lastEventId });
    if (streamRefusal !== null) {
      res.writeHead(streamRefusal).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': connected\n\n');
    const after = lastEventId === undefined ? Number.POSITIVE_INFINITY : Number(lastEventId);
    for (const event of history) if (event.id > after) res.write(event.text);
    streams.add(res);
    res.on('close', () => {
      streams.delete(res);
      stalled.delete(res);
    });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const service: FakeKeyService = {
    url: `http://127.0.0.1:${port}`,
    token: FAKE_KEY_SERVICE_TOKEN,
    verifyCalls: () => verifyCalls,
    unauthorizedRequests: () => unauthorizedRequests,
    usageEvents,
    usageDuplicates: () => usageDuplicates,
    refuseUsage(status) {
      usageRefusal = status;
    },
    refuseVerify(status) {
      verifyRefusal = status;
    },
    streamRequests,
    requestHeaders,
    setVerifyDelay(ms) {
      verifyDelayMs = ms;
    },
    setAnswer(key, answer) {
      answers.set(keyHashOf(key), answer);
    },
    revoke(key, at = '2026-11-21T12:00:00.000Z') {
      const keyHash = keyHashOf(key);
      const answer = answers.get(keyHash);
      if (!answer) throw new Error('revoke: unknown key');
      if (answer.key.revokedAt !== null) return; // revoking again changes nothing
      answer.key.revokedAt = at;
      answer.key.revokedBy = 'usr_1';
      service.sendEvent('key.revoked', {
        keyId: answer.key.id,
        keyHash,
        organizationId: answer.key.organizationId,
        revokedAt: at,
      });
    },
    sendEvent(event, data) {
      const id = nextEventId++;
      const text = `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      history.push({ id, text });
      for (const stream of streams) stream.write(text);
      return String(id);
    },
    sendComment(text) {
      for (const stream of streams) stream.write(`: ${text}\n\n`);
    },
    openStreams: () => streams.size,
    dropStreams() {
      for (const stream of [...streams, ...stalled]) stream.destroy();
      streams.clear();
      stalled.clear();
    },
    stallStreams() {
      for (const stream of streams) stalled.add(stream);
      streams.clear();
    },
    refuseStreams(status) {
      streamRefusal = status;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        for (const stream of [...streams, ...stalled]) stream.destroy();
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
  return service;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isUsageEvent(value: unknown): value is Record<string, unknown> & { id: string } {
  return (
    isRecord(value) &&
    ['id', 'keyId', 'organizationId', 'route', 'at'].every((field) => typeof value[field] === 'string')
  );
}
