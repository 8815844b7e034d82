import type { IncomingHttpHeaders } from 'node:http';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import { Agent, buildConnector, type Dispatcher, request } from 'undici';
import { atDeadline, DeadlineError, deadlineError } from './deadline.js';

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

export interface UpstreamLimits {
  /** Each call's time, unless the call brings its own deadline. */
  readonly timeoutMs: number;
  /** Connections open to the upstream at once; calls beyond wait for one (under their deadline). */
  readonly connections: number;
  /** The largest answer taken, on the wire and once decoded: the contracts' largest (answerSizes.ts). */
  readonly maxAnswerBytes: number;
}

/** An answer larger than the upstream's maxAnswerBytes: refused, not read to its end. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
}

const gunzipAsync = promisify(gunzip);

/** Decoders of the encodings the calls accept (undici, unlike its fetch, leaves bodies encoded). */
const DECODERS: Readonly<Record<string, (bytes: Buffer, limit: { maxOutputLength: number }) => Promise<Buffer>>> = {
  gzip: gunzipAsync,
  'x-gzip': gunzipAsync,
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

/** undici's own timeouts, which may fire a moment before the deadline's timer: a timeout all the same. */
const UNDICI_TIMEOUTS = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

/**
 * How long a connection may stay open without having sent a request. One opened for a call sends it as soon
 * as it is connected; only a connection whose call went away while it opened sends nothing: undici 7 opens
 * one in place of an aborted call's and sets no keep-alive timer on it (nodejs/undici#5845). The figure is a
 * margin over that first write, and far below the 1 s within which an abandoned call's connections close.
 */
const UNUSED_CONNECTION_MS = 100;

/**
 * undici's own connector, with every connection that has sent nothing UNUSED_CONNECTION_MS after it opened
 * closed. A connection that carried a call is left to undici's keep-alive timeout (4 s, or the upstream's
 * `Keep-Alive` hint): reused meanwhile, closed after.
 */
function closingUnused(connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) =>
    connect(options, (...outcome) => {
      // On a failure undici's connector passes the error alone.
      if (outcome[0] === null) {
        const socket = outcome[1];
        setTimeout(() => {
          if (socket.bytesWritten === 0) socket.destroy();
        }, UNUSED_CONNECTION_MS).unref();
      }
      callback(...outcome);
    });
}

/** What carries an upstream's calls, given the upstream's own bounded agent; tests and the bench replace it. */
export type UpstreamRoute = (own: Dispatcher) => Dispatcher;

/** Never the global dispatcher: on Node 22 node:http installs its bundled undici 6 there, blind to our handlers. */
let route: UpstreamRoute = (own) => own;

/** Sends every upstream call from now on through what `next` makes of its upstream's agent; returns the one it replaces. */
export function routeUpstreamCalls(next: UpstreamRoute): UpstreamRoute {
  const previous = route;
  route = next;
  return previous;
}

export type UpstreamHttp = ReturnType<typeof createUpstreamHttp>;

/**
 * A call ends at its deadline: its request is aborted there, which destroys its connection (HTTP/1.1
 * cannot cancel a request otherwise), so a slow or trickling upstream holds nothing past it and the
 * agent's `connections` bound what is open at the upstream; a connection that carries no call is closed
 * (closingUnused). `send` keeps the chunks (the request API
 * would wrap them in a stream only to read them back); undici's decompress interceptor is
 * experimental. A redirect's 3xx is an unexpected status.
 */
export function createUpstreamHttp({ timeoutMs, connections, maxAnswerBytes }: UpstreamLimits) {
  const own = new Agent({ connections, connect: closingUnused(buildConnector({})) });
  let routed: { route: UpstreamRoute; dispatcher: Dispatcher } = { route, dispatcher: route(own) };
  const dispatcher = (): Dispatcher => {
    if (routed.route !== route) routed = { route, dispatcher: route(own) };
    return routed.dispatcher;
  };

  return {
    /** The whole answer within `timeoutMs` of the start (or the call's deadline), or DeadlineError. */
    send(url: string | URL, call: UpstreamCall): Promise<UpstreamAnswer> {
      const target = typeof url === 'string' ? new URL(url) : url;
      const ms = call.deadline === undefined ? timeoutMs : Math.max(1, Math.ceil(call.deadline - performance.now()));
      return dispatchWhole(
        dispatcher(),
        {
          origin: target.origin,
          path: `${target.pathname}${target.search}`,
          method: call.method,
          headers: { 'accept-encoding': 'gzip, deflate, br', ...call.headers },
          body: call.body ?? null,
          headersTimeout: ms,
          bodyTimeout: ms,
        },
        ms,
        maxAnswerBytes,
      );
    },

    /** A response whose body is read as it arrives (the event stream); the caller ends it with `signal`. */
    open(url: string, headers: Readonly<Record<string, string>>, signal: AbortSignal) {
      return request(url, { method: 'GET', headers, signal, dispatcher: dispatcher() });
    },
  };
}

/**
 * Ends at its deadline (atDeadline: an answer already in the socket is read first). A call still waiting for
 * a connection at its deadline is refused at once and aborted, unsent, when it gets one.
 */
function dispatchWhole(
  dispatcher: Dispatcher,
  options: Dispatcher.DispatchOptions,
  ms: number,
  maxAnswerBytes: number,
): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let head: Omit<UpstreamAnswer, 'text'> = { status: 0, statusText: '', headers: {} };
    let controller: Dispatcher.DispatchController | undefined;
    let expired: DeadlineError | undefined;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      cancelDeadline();
      outcome();
    };
    const fail = (err: Error) => settle(() => reject(err));
    const endsAt = performance.now() + ms;
    const expiredError = () => deadlineError('upstream call', ms);
    const cancelDeadline = atDeadline(ms, () => {
      if (settled) return;
      expired = expiredError();
      if (controller === undefined) fail(expired);
      else controller.abort(expired);
    });
    const tooLarge = () => new AnswerTooLargeError(`answer larger than ${maxAnswerBytes} bytes`);
    dispatcher.dispatch(options, {
      onRequestStart(started) {
        controller = started;
        // Its time is up, though its timer may not have run yet: not sent.
        if (expired === undefined && performance.now() >= endsAt) expired = expiredError();
        if (expired !== undefined) started.abort(expired);
      },
      onResponseStart(started, status, headers, statusText) {
        head = { status, statusText: statusText ?? '', headers };
        if (Number(headers['content-length']) > maxAnswerBytes) started.abort(tooLarge());
      },
      onResponseData(started, chunk) {
        received += chunk.length;
        if (received > maxAnswerBytes) {
          started.abort(tooLarge());
          return;
        }
        chunks.push(chunk);
      },
      onResponseEnd() {
        const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
        decoded(head, body, maxAnswerBytes).then(
          (answer) => settle(() => resolve(answer)),
          (err: Error) => fail(err),
        );
      },
      onResponseError(_controller, err) {
        const code = (err as { code?: unknown }).code;
        fail(typeof code === 'string' && UNDICI_TIMEOUTS.has(code) ? new DeadlineError(err.message) : err);
      },
    });
  });
}

async function decoded(
  head: Omit<UpstreamAnswer, 'text'>,
  body: Buffer,
  maxAnswerBytes: number,
): Promise<UpstreamAnswer> {
  const encoding = head.headers['content-encoding'];
  const decode = typeof encoding === 'string' ? DECODERS[encoding.trim().toLowerCase()] : undefined;
  const bytes = decode === undefined ? body : await decode(body, { maxOutputLength: maxAnswerBytes });
  return { status: head.status, statusText: head.statusText, headers: head.headers, text: bytes.toString('utf8') };
}
