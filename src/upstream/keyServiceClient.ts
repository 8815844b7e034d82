import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { z } from 'zod';
import { UpstreamError, type UpstreamFailure } from '../errors.js';
import { CallTimeoutError, createNodeHttpFetch } from './nodeHttpFetch.js';
import { retryAfterSeconds } from './retryAfter.js';
import { createLiveness, EVENT_LIVENESS_MS } from './streamLiveness.js';

/**
 * The internal key service (key-service.md): verify a key by its hash, report usage,
 * and follow the stream of changes that make a cached verification stale.
 * Every failure is an UpstreamError('key-service', ...), which the gateway answers
 * with 503 + Retry-After: authentication fails closed.
 */

export interface KeyRecord {
  readonly id: string;
  readonly organizationId: string;
  readonly prefix: string;
  readonly permissions: readonly string[];
  readonly expiresAt: Date;
  readonly revokedAt: Date | null;
}

export interface OrganizationRecord {
  readonly id: string;
  readonly plan: string;
  readonly usage: {
    readonly periodStart: Date;
    readonly periodEnd: Date;
    readonly used: number;
    /** null: the organization has no ceiling. */
    readonly ceiling: number | null;
  };
}

/** What `POST /v1/keys/verify` says about a hash: any key with it, expired and revoked ones included. */
export interface Verification {
  readonly key: KeyRecord;
  readonly organization: OrganizationRecord;
}

/** One successful public call, as `POST /v1/usage` takes it. `id` (a uuid) makes it idempotent. */
export interface UsageEvent {
  readonly id: string;
  readonly keyId: string;
  readonly organizationId: string;
  readonly route: string;
  /** RFC 3339, UTC. */
  readonly at: string;
}

export interface UsageReceipt {
  /** New events counted. */
  readonly accepted: number;
  /** Events the service already knew (sent before). */
  readonly duplicates: number;
}

export type KeyServiceEvent =
  | {
      readonly type: 'key.revoked';
      readonly keyId: string;
      readonly keyHash: string;
      readonly organizationId: string;
      readonly revokedAt: string;
    }
  | { readonly type: 'organization.updated'; readonly organizationId: string }
  | { readonly type: 'reset' };

export interface KeyEventHandlers {
  onEvent(event: KeyServiceEvent): void;
  /** The stream opened (true) or dropped (false); `detail` is for logs only. */
  onConnectionChange?(connected: boolean, detail: string): void;
}

export interface KeyEventStream {
  /** True while the stream is open and delivered bytes recently: only then are the events known to be complete. */
  isConnected(): boolean;
  /** Stops following; resolves once the connection and every timer are gone. */
  close(): Promise<void>;
}

export interface KeyServiceClient {
  /** The verification for a key hash, or null when no key has that hash. */
  verify(keyHash: string): Promise<Verification | null>;
  /** Records 1 to 1000 usage events. A 400 throws UsageRejectedError: retrying cannot help. */
  recordUsage(events: readonly UsageEvent[]): Promise<UsageReceipt>;
  /** Opens `GET /v1/events` and keeps it open (reconnecting with Last-Event-ID) until closed. */
  followEvents(handlers: KeyEventHandlers): KeyEventStream;
}

export type KeyServiceCall = 'verify' | 'usage';

export interface KeyServiceClientOptions {
  /** Base URL, without a trailing slash. */
  url: string;
  token: string;
  /** Per call; also the time allowed for the event stream to open. */
  timeoutMs: number;
  /** Called after every verify/usage call with its duration and outcome (metrics). */
  onCall?: (call: KeyServiceCall, seconds: number, outcome: 'ok' | UpstreamFailure) => void;
  events?: {
    /** First delay before reconnecting; doubles per failed attempt (with jitter). Default 500 ms. */
    reconnectDelayMs?: number;
    /** Upper bound of that delay. Default 30 s. */
    maxReconnectDelayMs?: number;
    /**
     * An open stream silent this long is not trusted (cached verifications are not used)
     * and is reconnected. Default: the ping interval plus a margin (streamLiveness.ts).
     */
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

const time = z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'not a time');

const VerificationSchema = z.object({
  key: z.object({
    id: z.string().min(1),
    organizationId: z.string().min(1),
    prefix: z.string(),
    permissions: z.array(z.string()),
    expiresAt: time,
    revokedAt: time.nullable(),
  }),
  organization: z.object({
    id: z.string().min(1),
    plan: z.string(),
    usage: z.object({
      periodStart: time,
      periodEnd: time,
      used: z.number().int().min(0),
      ceiling: z.number().int().min(0).nullable(),
    }),
  }),
});

const UnknownKeySchema = z.object({ error: z.literal('unknown_key') });
const UsageReceiptSchema = z.object({ accepted: z.number().int().min(0), duplicates: z.number().int().min(0) });
const KeyRevokedSchema = z.object({
  keyId: z.string(),
  keyHash: z.string().regex(/^[0-9a-f]{64}$/),
  organizationId: z.string(),
  revokedAt: z.string(),
});
const OrganizationUpdatedSchema = z.object({ organizationId: z.string() });

export function createKeyServiceClient(options: KeyServiceClientOptions): KeyServiceClient {
  const baseUrl = options.url.replace(/\/+$/, '');
  const authorization = `Bearer ${options.token}`;

  // verify and usage calls: node:http with keep-alive and one deadline timer per call (see
  // nodeHttpFetch); the event stream stays on the global fetch, whose streamed body it reads.
  const request = createNodeHttpFetch({ timeoutMs: options.timeoutMs });

  /** One POST; the status and parsed body for `read` to judge. Reports duration and outcome to onCall. */
  async function post<T>(call: KeyServiceCall, path: string, body: unknown, read: (status: number, json: unknown) => T): Promise<T> {
    const started = performance.now();
    let outcome: 'ok' | UpstreamFailure = 'ok';
    try {
      const res = await request(`${baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(body),
      });
      if (res.status === 429 || res.status === 503) {
        throw new UpstreamError(
          'key-service',
          'throttled',
          `${call}: status ${res.status}`,
          retryAfterSeconds(res.headers.get('retry-after')),
        );
      }
      return read(res.status, parseJson(await res.text()));
    } catch (err: unknown) {
      const failure = toUpstreamError(err, call);
      outcome = failure.failure;
      throw failure;
    } finally {
      options.onCall?.(call, (performance.now() - started) / 1000, outcome);
    }
  }

  return {
    verify(keyHash) {
      return post('verify', '/v1/keys/verify', { keyHash }, (status, json) => {
        if (status === 404 && UnknownKeySchema.safeParse(json).success) return null;
        if (status !== 200) throw new UpstreamError('key-service', 'bad_answer', `verify: status ${status}`);
        const parsed = VerificationSchema.safeParse(json);
        if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', 'verify: answer of another form');
        // The organization id on every platform query comes from this answer: it must agree with itself.
        if (parsed.data.key.organizationId !== parsed.data.organization.id) {
          throw new UpstreamError('key-service', 'bad_answer', 'verify: key and organization disagree');
        }
        return toVerification(parsed.data);
      });
    },

    recordUsage(events) {
      return post('usage', '/v1/usage', { events }, (status, json) => {
        if (status === 400) throw new UsageRejectedError(`usage: status 400 ${errorName(json)}`.trim());
        if (status !== 200) throw new UpstreamError('key-service', 'bad_answer', `usage: status ${status}`);
        const parsed = UsageReceiptSchema.safeParse(json);
        if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', 'usage: answer of another form');
        return parsed.data;
      });
    },

    followEvents(handlers) {
      return followEventStream(`${baseUrl}/v1/events`, authorization, options, handlers);
    },
  };
}

function toVerification(data: z.infer<typeof VerificationSchema>): Verification {
  return {
    key: {
      id: data.key.id,
      organizationId: data.key.organizationId,
      prefix: data.key.prefix,
      permissions: data.key.permissions,
      expiresAt: new Date(data.key.expiresAt),
      revokedAt: data.key.revokedAt === null ? null : new Date(data.key.revokedAt),
    },
    organization: {
      id: data.organization.id,
      plan: data.organization.plan,
      usage: {
        periodStart: new Date(data.organization.usage.periodStart),
        periodEnd: new Date(data.organization.usage.periodEnd),
        used: data.organization.usage.used,
        ceiling: data.organization.usage.ceiling,
      },
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function errorName(json: unknown): string {
  if (typeof json === 'object' && json !== null && 'error' in json && typeof json.error === 'string') {
    return json.error.slice(0, 100);
  }
  return '';
}

function toUpstreamError(err: unknown, call: string): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (err instanceof CallTimeoutError) return new UpstreamError('key-service', 'timeout', `${call}: no answer in time`);
  // Anything else was thrown by the request itself: the connection failed (refused, reset, DNS).
  return new UpstreamError('key-service', 'unreachable', `${call}: ${describe(err)}`);
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}

/** A stream message → the event it announces; null for events the gateway does not know. */
function toKeyServiceEvent(message: EventSourceMessage): KeyServiceEvent | null {
  switch (message.event) {
    case 'key.revoked': {
      const parsed = KeyRevokedSchema.safeParse(parseJson(message.data));
      // A revocation we cannot read might be any key's: treat it as "everything may be stale".
      return parsed.success ? { type: 'key.revoked', ...parsed.data } : { type: 'reset' };
    }
    case 'organization.updated': {
      const parsed = OrganizationUpdatedSchema.safeParse(parseJson(message.data));
      return parsed.success ? { type: 'organization.updated', ...parsed.data } : { type: 'reset' };
    }
    case 'reset':
      return { type: 'reset' };
    default:
      return null;
  }
}

const DEFAULT_RECONNECT_DELAY_MS = 500;
const DEFAULT_MAX_RECONNECT_DELAY_MS = 30_000;

function followEventStream(
  url: string,
  authorization: string,
  options: KeyServiceClientOptions,
  handlers: KeyEventHandlers,
): KeyEventStream {
  const maxDelayMs = options.events?.maxReconnectDelayMs ?? DEFAULT_MAX_RECONNECT_DELAY_MS;
  const idleTimeoutMs = options.events?.idleTimeoutMs ?? EVENT_LIVENESS_MS;
  // Judged by the clock on every question, not only by the idle timer, which a busy process runs late.
  const liveness = createLiveness(idleTimeoutMs);
  let baseDelayMs = options.events?.reconnectDelayMs ?? DEFAULT_RECONNECT_DELAY_MS;
  const closing = new AbortController();
  let connected = false;
  let lastEventId: string | undefined;
  let failedAttempts = 0;
  /** A wait the service asked for (Retry-After on 429/503), used once. */
  let requestedDelayMs = 0;

  function setConnected(value: boolean, detail: string): void {
    if (connected === value) return;
    connected = value;
    handlers.onConnectionChange?.(value, detail);
  }

  /** One connection, from opening to its end; resolves with why it ended. */
  async function readOnce(): Promise<string> {
    // One controller that closing aborts too: a signal made by AbortSignal.any may be
    // garbage-collected on Node 20 and then never reach the fetch, leaving close() hanging.
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
      const headers: Record<string, string> = { authorization, accept: 'text/event-stream', 'cache-control': 'no-cache' };
      if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
      const res = await fetch(url, { headers, signal });
      const contentType = res.headers.get('content-type') ?? '';
      if (res.status !== 200 || !contentType.startsWith('text/event-stream') || !res.body) {
        await res.body?.cancel();
        if (res.status === 429 || res.status === 503) {
          requestedDelayMs = (retryAfterSeconds(res.headers.get('retry-after')) ?? 0) * 1000;
        }
        return `events: status ${res.status}`;
      }
      failedAttempts = 0;
      liveness.touch();
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
      // The abort does not always reach a body already being read (seen on Node 20 under
      // load): cancelling the reader ends the pending read for certain.
      const reader = res.body.getReader();
      const cancelRead = () => void reader.cancel().catch(() => undefined);
      signal.addEventListener('abort', cancelRead, { once: true });
      try {
        for (let read = await reader.read(); !read.done; read = await reader.read()) {
          abortAfter(idleTimeoutMs); // any bytes, pings included, prove the stream alive
          liveness.touch();
          parser.feed(decoder.decode(read.value, { stream: true }));
        }
      } finally {
        signal.removeEventListener('abort', cancelRead);
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
      const backoff = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(failedAttempts, 16));
      failedAttempts += 1;
      const delay = Math.max(requestedDelayMs, backoff * (0.5 + Math.random() * 0.5));
      requestedDelayMs = 0;
      await sleep(delay, closing.signal);
    }
  })();

  return {
    isConnected: () => connected && liveness.isAlive(),
    async close() {
      closing.abort();
      await running;
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
