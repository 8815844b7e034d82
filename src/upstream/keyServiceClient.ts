import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { UpstreamError, type UpstreamFailure } from '../errors.js';
import { KEY_SERVICE_ANSWER_MAX_BYTES, KEY_SERVICE_CONNECTIONS } from './answerSizes.js';
import { retryDelayMs } from './backoff.js';
import { sleep } from './deadline.js';
import {
  ErrorAnswerSchema,
  type KeyEventHandlers,
  type KeyEventStream,
  type KeyServiceEvent,
  KeyServiceEventSchema,
  parseJson,
  type UsageEvent,
  UsageReceiptSchema,
  type Verification,
  VerificationSchema,
} from './keyServiceContract.js';
import { describe, failureFromStatus, failureFromThrown, headerText, retryAfterSeconds } from './upstreamFailure.js';
import { createUpstreamHttp } from './upstreamHttp.js';

export type KeyServiceClient = ReturnType<typeof createKeyServiceClient>;

export type KeyServiceCall = 'verify' | 'usage' | 'probe';

export interface KeyServiceClientOptions {
  url: string;
  token: string;
  /** Per call; also the time allowed for the event stream to open. */
  timeoutMs: number;
  onCall?: (call: KeyServiceCall, seconds: number, outcome: 'ok' | UpstreamFailure) => void;
  events?: {
    /** First delay before reconnecting; doubles per failed attempt (with jitter). */
    reconnectDelayMs?: number;
    maxReconnectDelayMs?: number;
    /** An open stream silent this long is not trusted (nothing cached is used) and is reconnected. */
    idleTimeoutMs?: number;
  };
}

/** A usage batch the service refused as a whole (400): nothing of it was counted. */
export class UsageRejectedError extends UpstreamError {
  constructor(detail: string) {
    super('key-service', 'bad_answer', detail);
    this.name = 'UsageRejectedError';
  }
}

/** A hash no key can have: answered 404 without work. */
const NO_SUCH_KEY_HASH = '0'.repeat(64);

/** The key service's calls (key-service.md); every failure is an UpstreamError, answered 503: auth fails closed. */
export function createKeyServiceClient(options: KeyServiceClientOptions) {
  const baseUrl = options.url.replace(/\/+$/, '');
  const authorization = `Bearer ${options.token}`;
  const http = createUpstreamHttp({
    timeoutMs: options.timeoutMs,
    connections: KEY_SERVICE_CONNECTIONS,
    maxAnswerBytes: KEY_SERVICE_ANSWER_MAX_BYTES,
  });
  const headers = { authorization, 'content-type': 'application/json', accept: 'application/json' };

  /** One POST, 429/503 turned into throttled; `read` judges the rest. */
  async function post<T>(
    call: KeyServiceCall,
    path: string,
    body: unknown,
    read: (status: number, json: unknown) => T,
  ): Promise<T> {
    const started = performance.now();
    let outcome: 'ok' | UpstreamFailure = 'ok';
    try {
      const answer = await http.send(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (answer.status === 429 || answer.status === 503)
        throw failureFromStatus('key-service', call, answer.status, answer.headers['retry-after']);
      return read(answer.status, parseJson(answer.text));
    } catch (err: unknown) {
      const failure = failureFromThrown('key-service', call, err);
      outcome = failure.failure;
      throw failure;
    } finally {
      options.onCall?.(call, (performance.now() - started) / 1000, outcome);
    }
  }

  function verify(call: KeyServiceCall, keyHash: string): Promise<Verification | null> {
    return post(call, '/v1/keys/verify', { keyHash }, (status, json) => {
      if (status === 404 && ErrorAnswerSchema.safeParse(json).data?.error === 'unknown_key') return null;
      if (status !== 200) throw failureFromStatus('key-service', call, status, null);
      const parsed = VerificationSchema.safeParse(json);
      if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', `${call}: answer of another form`);
      // The organization id on every platform query comes from this answer: it must agree with itself.
      if (parsed.data.key.organizationId !== parsed.data.organization.id) {
        throw new UpstreamError('key-service', 'bad_answer', `${call}: key and organization disagree`);
      }
      return parsed.data;
    });
  }

  /** Follows `GET /v1/events`: one connection at a time, reconnecting with Last-Event-ID after a drop. */
  function followEvents(handlers: KeyEventHandlers): KeyEventStream {
    const maxMs = options.events?.maxReconnectDelayMs ?? 30_000;
    const backoff = { baseMs: options.events?.reconnectDelayMs ?? 500, maxMs, random: Math.random };
    const idleTimeoutMs = options.events?.idleTimeoutMs ?? EVENT_LIVENESS_MS;
    // Judged by the clock on every question, not only by the idle timer, which a busy process runs late.
    let lastByteAt = Number.NEGATIVE_INFINITY;
    const baseHeaders = { authorization, accept: 'text/event-stream', 'cache-control': 'no-cache' };
    const closing = new AbortController();
    let connected = false;
    let lastEventId: string | undefined;
    let failedAttempts = 0;
    /** Retry-After on 429/503, used once. */
    let retryAfter: number | undefined;

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
        const res = await http.open(`${baseUrl}/v1/events`, headers, signal);
        if (res.statusCode !== 200 || !headerText(res.headers['content-type']).startsWith('text/event-stream')) {
          await res.body.dump();
          if (res.statusCode === 429 || res.statusCode === 503)
            retryAfter = retryAfterSeconds(res.headers['retry-after']);
          return `events: status ${res.statusCode}`;
        }
        failedAttempts = 0;
        lastByteAt = performance.now();
        connected = true;
        handlers.onConnectionChange?.(true, 'events: connected');
        abortAfter(idleTimeoutMs);
        const parser = createParser({
          onEvent(message) {
            if (message.id !== undefined) lastEventId = message.id;
            const event = toKeyServiceEvent(message);
            // A handler that throws ends this connection: the subscriber then sees it drop.
            if (event) handlers.onEvent(event);
          },
          onRetry(ms) {
            backoff.baseMs = Math.min(Math.max(ms, 100), maxMs);
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
        const dropped = connected;
        connected = false;
        if (dropped) handlers.onConnectionChange?.(false, detail);
        if (closing.signal.aborted) break;
        failedAttempts += 1;
        const delay = retryDelayMs(failedAttempts, { ...backoff, retryAfterSeconds: retryAfter });
        retryAfter = undefined;
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

  return {
    verify: (keyHash: string) => verify('verify', keyHash),

    /** Records 1 to 1000 usage events. A 400 throws UsageRejectedError: retrying cannot help. */
    recordUsage(events: readonly UsageEvent[]) {
      return post('usage', '/v1/usage', { events }, (status, json) => {
        if (status === 400) {
          const name = ErrorAnswerSchema.safeParse(json).data?.error.slice(0, 100) ?? '';
          throw new UsageRejectedError(`usage: status 400 ${name}`.trim());
        }
        if (status !== 200) throw failureFromStatus('key-service', 'usage', status, null);
        const parsed = UsageReceiptSchema.safeParse(json);
        if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', 'usage: answer of another form');
        return parsed.data;
      });
    },

    /** True while the service answers verify with our token. */
    isReady: (): Promise<boolean> =>
      verify('probe', NO_SUCH_KEY_HASH)
        .then(() => true)
        .catch(() => false),

    followEvents,
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
