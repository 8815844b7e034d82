import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { DEFAULT_KEEP_ALIVE_TIMEOUT_MS } from '../config.js';
import { failureBody } from '../envelope.js';
import { ApiError, type ReasonOf } from '../errors.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { createRefusalLog, type RefusalLog } from './refusalLog.js';
import { clientAddress } from './requestCredentials.js';
import { isWellFormedRequestId } from './requestId.js';

export interface HttpServerOptions {
  /** Request line plus headers, in bytes; beyond it → 431 (or 414 when the URL alone overflows). */
  readonly maxHeaderBytes?: number;
  /** Longest request target (path and query) answered normally; beyond it → 414. */
  readonly maxUrlBytes?: number;
  /** A client must finish sending its headers within this time. */
  readonly headersTimeoutMs?: number;
  /** A client must finish sending its whole request within this time. */
  readonly requestTimeoutMs?: number;
  /**
   * An idle keep-alive connection is closed after this time. Node counts the two limits
   * above from a request's first byte, not from the end of the previous one, so an idle
   * connection outliving them is no loophole for slow clients.
   */
  readonly keepAliveTimeoutMs?: number;
  /** How often Node checks the two timeouts above (its default, 30 s, would let them overrun). */
  readonly timeoutCheckIntervalMs?: number;
  /** Open connections at most; Node closes any beyond at once, before reading a byte. */
  readonly maxConnections?: number;
  /** Open connections one client may hold at most; beyond, a new one is closed at once. */
  readonly maxConnectionsPerClient?: number;
  /** Proxies in front that append to X-Forwarded-For: who the client is (requestCredentials.ts). */
  readonly trustedProxyHops?: number;
  readonly logger?: Logger;
  readonly metrics?: GatewayMetrics;
}

export const HTTP_SERVER_DEFAULTS = {
  maxHeaderBytes: 16 * 1024,
  maxUrlBytes: 8 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  timeoutCheckIntervalMs: 1_000,
} as const;

/**
 * Requests of one connection in progress at once. Node hands on every pipelined request it
 * has read; past this bound the connection stops reading, so what a client pipelines beyond
 * waits unread in the kernel (backpressure) and its memory here is bounded by design.
 */
export const REQUESTS_IN_PROGRESS_PER_CONNECTION = 4;

/**
 * Requests of one connection read but not begun at most. Node parses a whole network read
 * (64 KiB, a thousand small requests) before the pause takes hold; a client that sends more
 * than this at once is flooding, not pipelining, and its connection is closed, which lets
 * what it sent be collected at once.
 */
export const REQUESTS_WAITING_PER_CONNECTION = 64;

/**
 * Share of MAX_CONNECTIONS past which each new connection has idle keep-alive ones closed:
 * a slot held by nobody's request goes to a newcomer before the instance turns anyone away.
 */
const NEAR_FULL_SHARE = 0.9;

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** One open connection: whose it is, and its requests in progress or waiting their turn. */
interface Connection {
  readonly socket: Socket;
  client: string | undefined;
  readonly inProgress: ServerResponse[];
  readonly waiting: Array<readonly [IncomingMessage, ServerResponse]>;
}

/** What the HTTP parser hands to 'clientError'. */
interface ClientError extends Error {
  code?: string;
  rawPacket?: Buffer;
}

/**
 * The gateway's HTTP server: Node's timeouts set so slow clients cannot hold sockets,
 * and oversized URLs and headers answered 414 / 431 in the JSON envelope instead of
 * Node's bare status line. Listening stays with gateway.ts, shutdown with lifecycle/shutdown.ts.
 */
export function createHttpServer(app: { callback(): RequestListener }, options: HttpServerOptions = {}): Server {
  const settings = { ...HTTP_SERVER_DEFAULTS, ...withoutUndefined(options) };
  const handle = app.callback();
  const hops = options.trustedProxyHops ?? 0;
  const clients = clientCounts(options.maxConnectionsPerClient ?? Number.POSITIVE_INFINITY);
  const connections = new WeakMap<Socket, Connection>();
  const busy = (connection: Connection) =>
    connection.inProgress.length >= REQUESTS_IN_PROGRESS_PER_CONNECTION || connection.waiting.length > 0;
  const start = (connection: Connection, req: IncomingMessage, res: ServerResponse): void => {
    connection.inProgress.push(res);
    res.once('close', () => {
      connection.inProgress.splice(connection.inProgress.indexOf(res), 1);
      if (connection.socket.destroyed) return; // nobody left to answer
      const next = connection.waiting.shift();
      if (next) start(connection, ...next);
      else if (!busy(connection)) connection.socket.resume();
    });
    answer(req, res);
  };
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    if ((req.url ?? '').length > settings.maxUrlBytes) {
      const given = req.headers['x-request-id'];
      const candidate = typeof given === 'string' ? given : undefined;
      const requestId = isWellFormedRequestId(candidate) ? candidate : randomUUID();
      const rejection = envelopeOf('URI_TOO_LONG', requestId);
      res.writeHead(rejection.status, rejection.headers);
      res.end(rejection.body);
      reportRejection(options, refusals, requestId, req.method ?? 'unknown', rejection.status, 'uri_too_long');
      return;
    }
    handle(req, res);
  };
  // Anyone can send unreadable requests as fast as the network carries them: lines are rationed.
  const refusals = options.logger ? createRefusalLog(options.logger) : undefined;
  const server = createServer(
    {
      maxHeaderSize: settings.maxHeaderBytes,
      headersTimeout: settings.headersTimeoutMs,
      requestTimeout: settings.requestTimeoutMs,
      connectionsCheckingInterval: settings.timeoutCheckIntervalMs,
    },
    (req, res) => {
      const connection = connections.get(req.socket);
      if (connection === undefined) return answer(req, res);
      // Behind proxies the client is known only from a request's X-Forwarded-For: the connection is its latest's.
      if (hops > 0) {
        const client = clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], hops);
        if (!clients.claim(connection, client)) return void req.socket.destroy();
      }
      if (!busy(connection)) return start(connection, req, res);
      if (connection.waiting.length >= REQUESTS_WAITING_PER_CONNECTION) return void req.socket.destroy();
      connection.waiting.push([req, res]);
      req.socket.pause();
    },
  );
  server.keepAliveTimeout = settings.keepAliveTimeoutMs;
  const { maxConnections } = options;
  if (maxConnections !== undefined) server.maxConnections = maxConnections;
  let open = 0;
  server.on('connection', (socket: Socket) => {
    const connection: Connection = { socket, client: undefined, inProgress: [], waiting: [] };
    connections.set(socket, connection);
    open += 1;
    socket.once('close', () => {
      open -= 1;
      clients.release(connection);
      // Node closes only the answer on the socket; those queued behind it end with the connection too.
      for (const res of [...connection.inProgress, ...connection.waiting.map(([, queued]) => queued)]) {
        if (res.socket === null) res.emit('close');
      }
      connection.waiting.length = 0;
    });
    if (hops === 0 && !clients.claim(connection, socket.remoteAddress ?? 'unknown')) {
      socket.destroy();
      return;
    }
    // Node resumes a socket itself when it reads a request body or finishes an answer: a busy one stays paused.
    socket.on('resume', () => {
      if (busy(connection)) socket.pause();
    });
    if (maxConnections !== undefined && open >= maxConnections * NEAR_FULL_SHARE) server.closeIdleConnections();
  });

  server.on('clientError', (err: ClientError, socket: Duplex) => {
    // Nothing to answer on a dead socket, or mid-way through another response on it.
    if (err.code === 'ECONNRESET' || !socket.writable || hasResponseInFlight(socket)) {
      socket.destroy();
      return;
    }
    const requestId = randomUUID();
    const rejection = envelopeOf(rejectionCode(err, settings.maxUrlBytes), requestId);
    endThenDestroy(socket, rawResponse(rejection));
    reportRejection(options, refusals, requestId, 'unknown', rejection.status, err.code ?? 'parse_error');
  });
  return server;
}

/** Open connections per client address, each claimed against the cap. */
function clientCounts(cap: number) {
  const counts = new Map<string, number>();
  const release = (connection: Connection): void => {
    const { client } = connection;
    if (client === undefined) return;
    const left = (counts.get(client) ?? 1) - 1;
    if (left > 0) counts.set(client, left);
    else counts.delete(client);
    connection.client = undefined;
  };
  return {
    /** Counts the connection as the client's; false when the client holds its cap already. */
    claim(connection: Connection, client: string): boolean {
      if (connection.client === client) return true;
      release(connection);
      const held = counts.get(client) ?? 0;
      if (held >= cap) return false;
      counts.set(client, held + 1);
      connection.client = client;
      return true;
    },
    release,
  };
}

/** What a request the parser refused was guilty of. */
function rejectionCode(err: ClientError, maxUrlBytes: number): RejectionCode {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_REQUEST_TIMEOUT':
      return 'REQUEST_TIMEOUT'; // the client never finished its request within the time limits
    case 'HPE_HEADER_OVERFLOW':
      return requestLineOverflows(err.rawPacket, maxUrlBytes) ? 'URI_TOO_LONG' : 'HEADERS_TOO_LARGE';
    default:
      return 'BAD_REQUEST';
  }
}

type RejectionCode = 'URI_TOO_LONG' | 'HEADERS_TOO_LARGE' | 'BAD_REQUEST' | 'REQUEST_TIMEOUT' | 'SERVICE_UNAVAILABLE';

const REJECTIONS: { [C in RejectionCode]: { reason: ReasonOf<C>; message: string } } = {
  URI_TOO_LONG: { reason: 'uri_too_long', message: 'The request URL is too long.' },
  HEADERS_TOO_LARGE: { reason: 'headers_too_large', message: 'The request headers are too large.' },
  BAD_REQUEST: { reason: 'unreadable_request', message: 'The request could not be read.' },
  REQUEST_TIMEOUT: { reason: 'request_timeout', message: 'The request was not received in time.' },
  SERVICE_UNAVAILABLE: { reason: 'shutting_down', message: 'This instance is shutting down. Retry the request.' },
};

/** Another instance takes the retry at once: the shortest wait HTTP can express. */
const DRAINING_RETRY_AFTER_SECONDS = 1;

/**
 * The answer to a request still running when a shutdown's drain ends (lifecycle/shutdown.ts):
 * 503 in the envelope, with Retry-After and Connection: close, rather than a cut connection.
 * The headers its handler had set belonged to an answer that is not sent, and go. The
 * handler may still finish; nothing it does then reaches the caller or counts (app.ts).
 */
export function answerDraining(res: ServerResponse): void {
  const given = res.getHeader('X-Request-Id');
  const rejection = envelopeOf('SERVICE_UNAVAILABLE', typeof given === 'string' ? given : randomUUID());
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  res.writeHead(rejection.status, {
    ...rejection.headers,
    'Retry-After': String(DRAINING_RETRY_AFTER_SECONDS),
  });
  res.end(rejection.body);
}

interface Rejection {
  status: number;
  headers: Record<string, string>;
  body: string;
}

function envelopeOf(code: RejectionCode, requestId: string): Rejection {
  const { reason, message } = REJECTIONS[code];
  const error = new ApiError<RejectionCode>(code, message, { reason });
  const body = JSON.stringify(failureBody(error, requestId));
  return {
    status: error.status,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      'X-Request-Id': requestId,
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'no-store',
      Connection: 'close',
    },
    body,
  };
}

function rawResponse({ status, headers, body }: Rejection): string {
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${head.join('')}\r\n${body}`;
}

/**
 * Node reports one error for any overflow of the request head. When the bytes it was
 * parsing begin with a request line that has not ended within the URL limit, it was
 * the URL; otherwise the headers. (The check sees the chunk being parsed: a URL split
 * over many network chunks may be reported as 431, which still tells the truth: too big.)
 */
function requestLineOverflows(rawPacket: Buffer | undefined, maxUrlBytes: number): boolean {
  if (rawPacket === undefined) return false;
  const head = rawPacket.subarray(0, maxUrlBytes + 64).toString('latin1');
  if (!/^[A-Z]+ /.test(head)) return false;
  const lineEnd = head.indexOf('\r\n');
  return lineEnd === -1 || lineEnd > maxUrlBytes;
}

/**
 * How long a connection answered with an error may linger before it is destroyed. Ending alone
 * only half-closes it: a client that never closes its side would keep its slot under
 * MAX_CONNECTIONS for ever. Destroying at once could reset the connection before the client
 * read its answer when it sent more than the server read; a short grace lets the answer land.
 */
export const ERROR_CLOSE_GRACE_MS = 500;

/** Sends the last bytes of a connection, then destroys it once the grace has passed. */
export function endThenDestroy(socket: Duplex, bytes: string | Buffer): void {
  if (socket.destroyed) return; // the client went first
  socket.end(bytes);
  const timer = setTimeout(() => socket.destroy(), ERROR_CLOSE_GRACE_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** A keep-alive socket may carry a response still being written (Node's own check). */
function hasResponseInFlight(socket: Duplex): boolean {
  return Boolean((socket as { _httpMessage?: unknown })._httpMessage);
}

function reportRejection(
  options: HttpServerOptions,
  refusals: RefusalLog | undefined,
  requestId: string,
  method: string,
  status: number,
  reason: string,
): void {
  if (refusals?.admit(reason))
    options.logger?.warn({ requestId, method, route: null, status, reason }, 'request rejected by the HTTP server');
  options.metrics?.httpRequest('rejected', method, status, 0);
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
