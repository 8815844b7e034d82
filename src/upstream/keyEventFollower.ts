import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { retryDelayMs } from './backoff.js';
import { sleep } from './deadline.js';
import {
  type KeyEventHandlers,
  type KeyEventStream,
  type KeyServiceEvent,
  KeyServiceEventSchema,
  parseJson,
} from './keyServiceContract.js';
import { describe, headerText, retryAfterSeconds } from './upstreamFailure.js';
import type { UpstreamHttp } from './upstreamHttp.js';

export interface KeyEventStreamOptions {
  timeoutMs: number;
  events?: {
    /** First delay before reconnecting; doubles per failed attempt (with jitter). */
    reconnectDelayMs?: number;
    maxReconnectDelayMs?: number;
    /** An open stream silent this long is not trusted (nothing cached is used) and is reconnected. */
    idleTimeoutMs?: number;
  };
}

const KNOWN_EVENTS = new Set(['key.revoked', 'organization.updated', 'reset']);

/** A stream message → the event it announces; null for events the gateway does not know. */
function toKeyServiceEvent(message: EventSourceMessage): KeyServiceEvent | null {
  if (message.event === undefined || !KNOWN_EVENTS.has(message.event)) return null;
  const data = parseJson(message.data);
  const parsed = KeyServiceEventSchema.safeParse({ ...(typeof data === 'object' ? data : {}), type: message.event });
  // A change we cannot read might be any key's: treat it as "everything may be stale".
  return parsed.success ? parsed.data : { type: 'reset' };
}

/** The service pings every 15 s: silent longer than that (and a margin), events may be missing. */
const EVENT_LIVENESS_MS = 15_000 + 3_000;

/** Follows `GET /v1/events`: one connection at a time, reconnecting with Last-Event-ID after a drop. */
export function followEventStream(
  http: UpstreamHttp,
  url: string,
  authorization: string,
  options: KeyEventStreamOptions,
  handlers: KeyEventHandlers,
): KeyEventStream {
  const maxDelayMs = options.events?.maxReconnectDelayMs ?? 30_000;
  const idleTimeoutMs = options.events?.idleTimeoutMs ?? EVENT_LIVENESS_MS;
  // Judged by the clock on every question, not only by the idle timer, which a busy process runs late.
  let lastByteAt = Number.NEGATIVE_INFINITY;
  let baseDelayMs = options.events?.reconnectDelayMs ?? 500;
  const baseHeaders = { authorization, accept: 'text/event-stream', 'cache-control': 'no-cache' };
  const closing = new AbortController();
  let connected = false;
  let lastEventId: string | undefined;
  let failedAttempts = 0;
  /** Retry-After on 429/503, used once. */
  let requestedDelayMs = 0;

  function setConnected(value: boolean, detail: string): void {
    if (connected === value) return;
    connected = value;
    handlers.onConnectionChange?.(value, detail);
  }

  /** One connection; resolves with why it ended. */
  async function readOnce(): Promise<string> {
    // Not AbortSignal.any: on Node 20 its signal may be garbage-collected, leaving close() hanging.
    const connection = new AbortController();
    const { signal } = connection;
    const abortOnClose = () => connection.abort();
    closing.signal.addEventListener('abort', abortOnClose, { once: true });
    let idleTimer: NodeJS.Timeout | undefined;
    const abortAfter = (ms: number) => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => connection.abort(), ms);
    };
    abortAfter(options.timeoutMs);
    try {
      const headers = lastEventId === undefined ? baseHeaders : { ...baseHeaders, 'last-event-id': lastEventId };
      const res = await http.open(url, headers, signal);
      const contentType = headerText(res.headers['content-type']);
      if (res.statusCode !== 200 || !contentType.startsWith('text/event-stream')) {
        await res.body.dump();
        if (res.statusCode === 429 || res.statusCode === 503) {
          requestedDelayMs = (retryAfterSeconds(res.headers['retry-after']) ?? 0) * 1000;
        }
        return `events: status ${res.statusCode}`;
      }
      failedAttempts = 0;
      lastByteAt = performance.now();
      setConnected(true, 'events: connected');
      abortAfter(idleTimeoutMs);
      const parser = createParser({
        onEvent(message) {
          if (message.id !== undefined) lastEventId = message.id;
          const event = toKeyServiceEvent(message);
          // A handler that throws ends this connection: the subscriber then sees it drop.
          if (event) handlers.onEvent(event);
        },
        onRetry(ms) {
          baseDelayMs = Math.min(Math.max(ms, 100), maxDelayMs);
        },
      });
      const decoder = new TextDecoder();
      const body: AsyncIterable<Buffer> = res.body;
      // Ends a read already pending on the body for certain when the connection is aborted.
      const destroyBody = () => res.body.destroy();
      signal.addEventListener('abort', destroyBody, { once: true });
      try {
        for await (const chunk of body) {
          abortAfter(idleTimeoutMs); // any bytes, pings included, prove the stream alive
          lastByteAt = performance.now();
          parser.feed(decoder.decode(chunk, { stream: true }));
        }
      } finally {
        signal.removeEventListener('abort', destroyBody);
      }
      if (signal.aborted) throw new Error('aborted');
      return 'events: stream ended';
    } catch (err: unknown) {
      if (closing.signal.aborted) return 'events: closed';
      if (connection.signal.aborted) return connected ? 'events: silent too long' : 'events: no answer in time';
      return `events: ${describe(err)}`;
    } finally {
      clearTimeout(idleTimer);
      closing.signal.removeEventListener('abort', abortOnClose);
    }
  }

  const running = (async () => {
    while (!closing.signal.aborted) {
      const detail = await readOnce();
      setConnected(false, detail);
      if (closing.signal.aborted) break;
      failedAttempts += 1;
      const delay = retryDelayMs(failedAttempts, {
        baseMs: baseDelayMs,
        maxMs: maxDelayMs,
        random: Math.random,
        retryAfterSeconds: requestedDelayMs / 1000,
      });
      requestedDelayMs = 0;
      await sleep(delay, closing.signal);
    }
  })();

  return {
    isConnected: () => connected && performance.now() - lastByteAt <= idleTimeoutMs,
    async close() {
      closing.abort();
      await running;
    },
  };
}
