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
  /**
   * When the answer must be in (a `performance.now()` time), for a call that already waited
   * its turn: it then gets only what is left. Without it, `timeoutMs` from the send.
   */
  readonly deadline?: number;
}

export interface UpstreamAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
}

export interface UpstreamHttp {
  /** The whole answer within `timeoutMs` of the start, or DeadlineError. Redirects are answers, not followed. */
  send(url: string | URL, call: UpstreamCall): Promise<UpstreamAnswer>;
  /** A response whose body is read as it arrives (the event stream); the caller ends it with `signal`. */
  open(url: string, headers: Readonly<Record<string, string>>, signal: AbortSignal): Promise<Dispatcher.ResponseData>;
}

/**
 * The most an answer may hold, on the wire and once decoded. Far above any answer the
 * contracts allow (pages are bounded by their `first`), it bounds the memory one broken or
 * hostile upstream can take per call, and what a small compressed body may expand into.
 */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/** An answer larger than MAX_ANSWER_BYTES: refused, not read to its end. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
}

const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const brotliAsync = promisify(brotliDecompress);
const DECODE_LIMIT = { maxOutputLength: MAX_ANSWER_BYTES };

/** Decoders of the encodings the calls accept (undici, unlike its fetch, leaves bodies encoded). */
const DECODERS: Readonly<Record<string, (bytes: Buffer) => Promise<Buffer>>> = {
  gzip: (bytes) => gunzipAsync(bytes, DECODE_LIMIT),
  'x-gzip': (bytes) => gunzipAsync(bytes, DECODE_LIMIT),
  deflate: (bytes) => inflateAsync(bytes, DECODE_LIMIT),
  br: (bytes) => brotliAsync(bytes, DECODE_LIMIT),
};

/**
 * The process's one pool of upstream connections: an Agent of the undici package the gateway
 * depends on, handed to every call, never the process-global dispatcher. That one belongs to
 * whoever sets it first: on Node 22 importing node:http installs Node's bundled undici 6,
 * which does not understand the handlers of undici 7 that `send` gives it.
 */
let upstreamDispatcher: Dispatcher = new Agent();

/**
 * Sends every upstream call, from now on, through `dispatcher` (tests: nock for made-up hosts;
 * the bench: undici's MockAgent). Returns the dispatcher it replaces, to put back.
 */
export function routeUpstreamCalls(dispatcher: Dispatcher): Dispatcher {
  const previous = upstreamDispatcher;
  upstreamDispatcher = dispatcher;
  return previous;
}

/**
 * Every upstream call goes through undici, on the pool above: keep-alive connections per
 * origin, shared by every client of the process. A call whose answer is
 * read whole (`send`) uses the Dispatcher API with a handler that keeps the chunks; the
 * event stream (`open`) uses the request API, whose body is a Node stream. No web streams.
 * (undici's decompress interceptor would decode answers too, but it is marked experimental
 * and warns on first use.) A GraphQL or key-service endpoint that redirects is misconfigured:
 * undici follows no redirect unless told to, and the 3xx is reported as the unexpected
 * status it is.
 */
export function createUpstreamHttp(options: { timeoutMs: number }): UpstreamHttp {
  const { timeoutMs } = options;

  return {
    send(url, call) {
      const target = typeof url === 'string' ? new URL(url) : url;
      const ms = call.deadline === undefined ? timeoutMs : Math.max(1, Math.ceil(call.deadline - performance.now()));
      // The deadline answers the caller; undici's own timeouts (no AbortController per
      // call) then end a connection that stays silent, and a late answer is still read
      // to its end so that its connection returns to the pool.
      const answer = dispatchWhole(upstreamDispatcher, {
        origin: target.origin,
        path: `${target.pathname}${target.search}`,
        method: call.method,
        headers: { 'accept-encoding': 'gzip, deflate, br', ...call.headers },
        body: call.body ?? null,
        headersTimeout: ms,
        bodyTimeout: ms,
      }).then(decoded);
      return withDeadline(ms, () => answer, 'upstream call');
    },

    open(url, headers, signal) {
      return request(url, { method: 'GET', headers, signal, dispatcher: upstreamDispatcher });
    },
  };
}

interface WholeAnswer {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * One call through undici's Dispatcher API with a handler that keeps the body's chunks:
 * the request API would wrap them in a Readable stream only to read them back at once.
 */
function dispatchWhole(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions): Promise<WholeAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let head: Omit<WholeAnswer, 'body'> = { status: 0, statusText: '', headers: {} };
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
        resolve({ ...head, body: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) });
      },
      onResponseError(_controller, err) {
        reject(err);
      },
    });
  });
}

async function decoded(answer: WholeAnswer): Promise<UpstreamAnswer> {
  const encoding = answer.headers['content-encoding'];
  const decode = typeof encoding === 'string' ? DECODERS[encoding.trim().toLowerCase()] : undefined;
  const body = decode === undefined ? answer.body : await decode(answer.body);
  return { status: answer.status, statusText: answer.statusText, headers: answer.headers, text: body.toString('utf8') };
}
