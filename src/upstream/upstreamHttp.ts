import type { IncomingHttpHeaders } from 'node:http';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { Agent, type Dispatcher, request } from 'undici';
import { withDeadline } from './deadline.js';

/** One call to an upstream: a small request body out, the whole answer back as text. */
export interface UpstreamCall {
  readonly method: 'GET' | 'POST';
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** When the answer must be in (a `performance.now()` time); without it, `timeoutMs` from the send. */
  readonly deadline?: number;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

/** Far above any answer the contracts allow: bounds what a broken or hostile upstream takes per call. */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** An answer larger than MAX_ANSWER_BYTES: refused, not read to its end. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
}

const DECODE_LIMIT = { maxOutputLength: MAX_ANSWER_BYTES };
const gunzipAsync = promisify(gunzip);

/** Decoders of the encodings the calls accept (undici, unlike its fetch, leaves bodies encoded). */
const DECODERS: Readonly<Record<string, (bytes: Buffer, limit: typeof DECODE_LIMIT) => Promise<Buffer>>> = {
  gzip: gunzipAsync,
  'x-gzip': gunzipAsync,
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/** Never the global dispatcher: on Node 22 node:http installs its bundled undici 6 there, blind to our handlers. */
let upstreamDispatcher: Dispatcher = new Agent();

/** Sends every upstream call from now on through `dispatcher` (tests, bench); returns the one it replaces. */
export function routeUpstreamCalls(dispatcher: Dispatcher): Dispatcher {
  const previous = upstreamDispatcher;
  upstreamDispatcher = dispatcher;
  return previous;
}

export type UpstreamHttp = ReturnType<typeof createUpstreamHttp>;

/**
 * `send` keeps the chunks (the request API would wrap them in a stream only to read them back);
 * undici's decompress interceptor is experimental. A redirect's 3xx is an unexpected status.
 */
export function createUpstreamHttp({ timeoutMs }: { timeoutMs: number }) {
  return {
    /** The whole answer within `timeoutMs` of the start (or the call's deadline), or DeadlineError. */
    send(url: string | URL, call: UpstreamCall): Promise<UpstreamAnswer> {
      const target = typeof url === 'string' ? new URL(url) : url;
      const ms = call.deadline === undefined ? timeoutMs : Math.max(1, Math.ceil(call.deadline - performance.now()));
      // The deadline answers the caller; undici's own timeouts end a silent connection, and a late
      // answer is still read to its end so that its connection returns to the pool.
      const answer = dispatchWhole(upstreamDispatcher, {
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: call.method,
        headers: { 'accept-encoding': 'gzip, deflate, br', ...call.headers },
        body: call.body ?? null,
        headersTimeout: ms,
        bodyTimeout: ms,
      });
      return withDeadline(ms, () => answer, 'upstream call');
    },

    /** A response whose body is read as it arrives (the event stream); the caller ends it with `signal`. */
    open(url: string, headers: Readonly<Record<string, string>>, signal: AbortSignal) {
      return request(url, { method: 'GET', headers, signal, dispatcher: upstreamDispatcher });
    },
  };
}

function dispatchWhole(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let head: Omit<UpstreamAnswer, 'text'> = { status: 0, statusText: '', headers: {} };
    dispatcher.dispatch(options, {
      // Its presence marks the handler as one of undici 7's form; nothing to do at the start.
      onRequestStart() {},
      onResponseStart(_controller, status, headers, statusText) {
        head = { status, statusText: statusText ?? '', headers };
      },
      onResponseData(controller, chunk) {
        received += chunk.length;
        if (received > MAX_ANSWER_BYTES) {
          controller.abort(new AnswerTooLargeError(`answer larger than ${MAX_ANSWER_BYTES} bytes`));
          return;
        }
        chunks.push(chunk);
      },
      onResponseEnd() {
        resolve(decoded(head, chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)));
      },
      onResponseError(_controller, err) {
        reject(err);
      },
    });
  });
}

async function decoded(head: Omit<UpstreamAnswer, 'text'>, body: Buffer): Promise<UpstreamAnswer> {
  const encoding = head.headers['content-encoding'];
  const decode = typeof encoding === 'string' ? DECODERS[encoding.trim().toLowerCase()] : undefined;
  const text = (decode === undefined ? body : await decode(body, DECODE_LIMIT)).toString('utf8');
  return { status: head.status, statusText: head.statusText, headers: head.headers, text };
}
