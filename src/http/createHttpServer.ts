import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { DEFAULT_KEEP_ALIVE_TIMEOUT_MS } from '../config.js';
import { failureBody } from '../envelope.js';
import { ApiError, CODE_BY_REASON } from '../errors.js';
import type { GatewayMetrics } from '../metrics/gatewayMetrics.js';
import { createRefusalLog } from './refusalLog.js';
import { clientAddress } from './requestCredentials.js';
import { requestIdOf } from './requestId.js';

export interface HttpServerOptions {
  readonly headersTimeoutMs?: number;
  readonly requestTimeoutMs?: number;
  /** Node counts the two limits above from a request's first byte: an idle connection is no loophole for slow clients. */
  readonly keepAliveTimeoutMs?: number;
  /** How often Node checks the timeouts above (its default, 30 s, would let them overrun). */
  readonly timeoutCheckIntervalMs?: number;
  /** A connection mid-request with no traffic either way this long is destroyed: a client that reads no answer. */
  readonly stallTimeoutMs?: number;
  /** Node closes any connection beyond at once, before reading a byte. */
  readonly maxConnections?: number;
  readonly maxConnectionsPerClient?: number;
  /** Proxies in front that append to X-Forwarded-For: who the client is. */
  readonly trustedProxyHops?: number;
  readonly logger?: Logger;
  readonly metrics?: GatewayMetrics;
}

export const HTTP_SERVER_DEFAULTS = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: DEFAULT_KEEP_ALIVE_TIMEOUT_MS,
  timeoutCheckIntervalMs: 1_000,
  // Past the request limit (a slow sender still gets its 408) and any handler's upstream calls.
  stallTimeoutMs: 60_000,
} as const;

/** Request line plus headers; beyond → 431, or 414 when the request line alone overflows. */
const MAX_HEADER_BYTES = 16 * 1024;
/** Longest request target answered normally; beyond → 414. */
const MAX_URL_BYTES = 8 * 1024;

/**
 * Header lines the gateway reads; more → 431. Node would keep 2,000 and drop the rest unseen (a
 * second Authorization among them); haproxy refuses past 101. One more is read, to see the excess.
 */
export const MAX_HEADER_LINES = 100;

/**
 * The headers Node keeps the first of, dropping any repeat unseen (its documented list, but for
 * Authorization, whose every line the gateway reads): a repeat → 431.
 */
const READ_ONCE = [
  'age',
  'content-length',
  'content-type',
  'etag',
  'expires',
  'from',
  'host',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
] as const;

/** One connection's requests in progress at once: past it the connection stops reading (the rest waits unread). */
const REQUESTS_IN_PROGRESS_PER_CONNECTION = 4;

/** Requests read but not begun (Node parses a whole network read before a pause holds): more closes it. */
const REQUESTS_WAITING_PER_CONNECTION = 64;

/**
 * Share of maxConnections past which a new connection has idle keep-alive ones closed, and the
 * oldest that never sent a byte, before anyone is turned away.
 */
const NEAR_FULL_SHARE = 0.9;

/** A request sent with the handshake may still be unread when its connection is taken: only older is silence silence. */
export const SILENCE_GRACE_MS = 100;

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

interface Connection {
  client: string | undefined;
  readonly inProgress: Set<ServerResponse>;
  readonly waiting: Array<readonly [IncomingMessage, ServerResponse]>;
}

/** Timeouts against slow clients, connections capped per client, pipelining bounded, refusals in the envelope. */
export function createHttpServer(app: { callback(): RequestListener }, options: HttpServerOptions = {}): Server {
  const setting = (name: keyof typeof HTTP_SERVER_DEFAULTS) => options[name] ?? HTTP_SERVER_DEFAULTS[name];
  const handle = app.callback();
  const hops = options.trustedProxyHops ?? 0;
  const perClientCap = options.maxConnectionsPerClient ?? Number.POSITIVE_INFINITY;
  const perClient = new Map<string, number>();
  const connections = new WeakMap<Socket, Connection>();
  // Anyone can send unreadable requests as fast as the network carries them: lines are rationed.
  const refusals = options.logger ? createRefusalLog(options.logger) : undefined;

  const reject = (requestId: string, method: string, status: number, reason: string): void => {
    if (refusals?.admit(reason))
      options.logger?.warn({ requestId, method, route: null, status, reason }, 'request rejected by the HTTP server');
    options.metrics?.httpRequest('rejected', method, status, 0);
  };
  const release = (connection: Connection): void => {
    const { client } = connection;
    if (client === undefined) return;
    const left = (perClient.get(client) ?? 1) - 1;
    if (left > 0) perClient.set(client, left);
    else perClient.delete(client);
    connection.client = undefined;
  };
  /** Counts the connection as the client's; false when the client holds its cap already. */
  const claim = (connection: Connection, client: string): boolean => {
    if (connection.client === client) return true;
    release(connection);
    const held = perClient.get(client) ?? 0;
    if (held >= perClientCap) return false;
    perClient.set(client, held + 1);
    connection.client = client;
    return true;
  };
  const busy = (connection: Connection) =>
    connection.inProgress.size >= REQUESTS_IN_PROGRESS_PER_CONNECTION || connection.waiting.length > 0;
  const start = (connection: Connection, req: IncomingMessage, res: ServerResponse): void => {
    connection.inProgress.add(res);
    // 'close' comes once per answer (see the connection's close below).
    res.on('close', () => {
      connection.inProgress.delete(res);
      if (req.socket.destroyed) return;
      const next = connection.waiting.shift();
      if (next) start(connection, ...next);
      else if (!busy(connection)) req.socket.resume();
    });
    const refusal = refusalOf(req);
    if (refusal === undefined) handle(req, res);
    else {
      const requestId = requestIdOf(req.headers['x-request-id']);
      const [reason, message] = refusal;
      reject(requestId, req.method ?? 'unknown', answerWith(res, reason, requestId, {}, message), reason);
    }
  };

  const server = createServer(
    {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: setting('headersTimeoutMs'),
      requestTimeout: setting('requestTimeoutMs'),
      connectionsCheckingInterval: setting('timeoutCheckIntervalMs'),
    },
    (req, res) => {
      const connection = connections.get(req.socket);
      if (connection === undefined) return handle(req, res);
      // Behind proxies the client is known only from a request's X-Forwarded-For: the connection is its latest's.
      if (hops > 0 && !claim(connection, clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for'], hops)))
        return void req.socket.destroy();
      if (!busy(connection)) return start(connection, req, res);
      if (connection.waiting.length >= REQUESTS_WAITING_PER_CONNECTION) return void req.socket.destroy();
      connection.waiting.push([req, res]);
      req.socket.pause();
    },
  );
  server.maxHeadersCount = MAX_HEADER_LINES + 1;
  server.keepAliveTimeout = setting('keepAliveTimeoutMs');
  server.timeout = setting('stallTimeoutMs');
  const { maxConnections } = options;
  if (maxConnections !== undefined) server.maxConnections = maxConnections;
  let open = 0;
  /**
   * Connections in the order they came that may not have sent a byte yet: Node counts them neither
   * idle nor timed out before its header deadline, so silent ones could hold every slot till then.
   */
  const unheard = new Map<Socket, number>();
  /** Closes the oldest connection silent past the grace (any that spoke leaves the list); false when none is. */
  const shedSilent = (): boolean => {
    const now = performance.now();
    for (const [candidate, since] of unheard) {
      // Past the first too young, the rest came later still.
      if (candidate.bytesRead > 0) unheard.delete(candidate);
      else if (now - since < SILENCE_GRACE_MS) return false;
      else {
        unheard.delete(candidate);
        candidate.destroy();
        return true;
      }
    }
    return false;
  };
  server.on('connection', (socket: Socket) => {
    const connection: Connection = { client: undefined, inProgress: new Set(), waiting: [] };
    connections.set(socket, connection);
    open += 1;
    socket.once('close', () => {
      open -= 1;
      unheard.delete(socket);
      release(connection);
      // Node closes only the answer on the socket; those queued behind it end with the connection too. An
      // answer finished on its socket is closed by Node (once, at the next tick), so 'close' comes once per
      // answer either way and its listeners are added with `on`: `once` wraps each and removes it at the emit.
      // Kept: −5.4 µs (6 %) per warm hit (compareBuilds --together, 12 rounds).
      for (const res of [...connection.inProgress, ...connection.waiting.map(([, queued]) => queued)]) {
        if (res.socket === null && !res.writableFinished) res.emit('close');
      }
      connection.waiting.length = 0;
    });
    if (hops === 0 && !claim(connection, socket.remoteAddress ?? 'unknown')) return void socket.destroy();
    // Node resumes a socket itself when it reads a request body or finishes an answer: a busy one stays paused.
    socket.on('resume', () => {
      if (busy(connection)) socket.pause();
    });
    if (maxConnections === undefined) return;
    // One in, one silent out (now, or once the youngest silent are past the grace): the count stays
    // below the cap while any connection is silent.
    if (open >= maxConnections * NEAR_FULL_SHARE) {
      server.closeIdleConnections();
      if (!shedSilent()) setTimeout(shedSilent, SILENCE_GRACE_MS).unref();
    }
    unheard.set(socket, performance.now());
  });

  server.on('clientError', (err: Error & { code?: string; rawPacket?: Buffer }, socket: Duplex) => {
    const current = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
    // Nothing to answer on a dead socket, or mid-way through another response on it (Node's own check).
    if (err.code === 'ECONNRESET' || !socket.writable || current?.headersSent) return void socket.destroy();
    // A body unreadable after valid headers: the request being handled is answered in its place (its log
    // line and count are the request's own), and the handler's answer, whenever it comes, goes nowhere.
    if (current) return void answerInstead(current, rejectionReason(err.code, err.rawPacket));
    const requestId = randomUUID();
    const { status, headers, body } = envelopeOf(rejectionReason(err.code, err.rawPacket), requestId);
    endThenDestroy(socket, rawAnswer(status, headers, body));
    reject(requestId, 'unknown', status, err.code ?? 'parse_error');
  });
  return server;
}

const MESSAGES = {
  uri_too_long: 'The request URL is too long.',
  headers_too_large: 'The request headers are too large.',
  too_many_headers: `The request has more than ${MAX_HEADER_LINES} header lines.`,
  header_repeated: 'A header that may appear once is repeated.',
  unreadable_request: 'The request could not be read.',
  request_timeout: 'The request was not received in time.',
  shutting_down: 'This instance is shutting down. Retry the request.',
} as const;

/** Why a request the parser read is refused before the app sees it: its URL, or headers it would not all see. */
function refusalOf(req: IncomingMessage): readonly [Reason, string] | undefined {
  if ((req.url ?? '').length > MAX_URL_BYTES) return ['uri_too_long', MESSAGES.uri_too_long];
  const lines = req.rawHeaders.length / 2;
  if (lines > MAX_HEADER_LINES) return ['headers_too_large', MESSAGES.too_many_headers];
  // As many names as lines: nothing repeated (the common request), and nothing more to look at.
  if (lines === Object.keys(req.headers).length) return undefined;
  const { headersDistinct } = req;
  const repeated = READ_ONCE.some((name) => (headersDistinct[name]?.length ?? 0) > 1);
  return repeated ? ['headers_too_large', MESSAGES.header_repeated] : undefined;
}

/** What a request the parser refused was guilty of. */
function rejectionReason(code: string | undefined, rawPacket: Buffer | undefined): Reason {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT' || code === 'HPE_REQUEST_TIMEOUT') return 'request_timeout';
  if (code !== 'HPE_HEADER_OVERFLOW') return 'unreadable_request';
  // One error for any overflow of the head: the URL's when the bytes parsed begin with a request line not
  // ended within its limit. (A URL split over network reads may get 431, which still says: too big.)
  const head = rawPacket?.subarray(0, MAX_URL_BYTES + 64).toString('latin1') ?? '';
  const lineEnd = head.indexOf('\r\n');
  return /^[A-Z]+ /.test(head) && (lineEnd === -1 || lineEnd > MAX_URL_BYTES) ? 'uri_too_long' : 'headers_too_large';
}

/** A 503 for a request still running when a shutdown's drain ends, rather than a cut connection. */
export function answerDraining(res: ServerResponse): void {
  // Another instance takes the retry at once: the shortest wait HTTP can express.
  answerInstead(res, 'shutting_down', { 'Retry-After': '1' });
}

/** Answers a request still being handled with `reason`'s envelope, in place of whatever its handler had set. */
function answerInstead(res: ServerResponse, reason: Reason, extra = {}): void {
  const requestId = requestIdOf(res.getHeader('X-Request-Id'));
  for (const name of res.getHeaderNames()) res.removeHeader(name);
  answerWith(res, reason, requestId, extra);
}

/** The reasons this server answers by itself. */
type Reason = 'uri_too_long' | 'headers_too_large' | 'unreadable_request' | 'request_timeout' | 'shutting_down';

/** Sends the envelope of `reason`; returns its status. */
function answerWith(
  res: ServerResponse,
  reason: Reason,
  requestId: string,
  extra = {},
  message: string = MESSAGES[reason],
): number {
  const { status, headers, body } = envelopeOf(reason, requestId, message);
  res.writeHead(status, { ...headers, ...extra });
  res.end(body);
  return status;
}

function envelopeOf(reason: Reason, requestId: string, message: string = MESSAGES[reason]) {
  const error = new ApiError(CODE_BY_REASON[reason], message, { reason });
  const body = JSON.stringify(failureBody(error, requestId));
  const headers = {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    'X-Content-Type-Options': 'nosniff',
    'Cache-Control': 'no-store',
    Connection: 'close',
  };
  return { status: error.status, headers, body };
}

/** An answer as bytes, for a socket no ServerResponse writes to. */
export function rawAnswer(status: number, headers: Record<string, unknown>, body: string | Buffer): Buffer {
  const lines = Object.entries(headers).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((one) => `${name}: ${String(one)}\r\n`),
  );
  const head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${lines.join('')}\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(body)]);
}

/** Ending alone only half-closes a connection; destroying at once could reset it before the client read its answer. */
const ERROR_CLOSE_GRACE_MS = 500;

/** Sends the last bytes of a connection, then destroys it once the grace has passed. */
export function endThenDestroy(socket: Duplex, bytes: Buffer): void {
  if (socket.destroyed) return;
  socket.end(bytes);
  const timer = setTimeout(() => socket.destroy(), ERROR_CLOSE_GRACE_MS).unref();
  socket.once('close', () => clearTimeout(timer));
}
