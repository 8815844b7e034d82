import { Socket } from 'node:net';
import Mocha, { type Context, type RootHookObject } from 'mocha';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { DocumentConformance, type RealAnswer } from '../openapi/documentConformance.js';

/**
 * The test client's one hook: every answer a test receives from a path the OpenAPI
 * document describes is checked against the document (status, required headers, body),
 * so an answer cannot drift from its description unnoticed. The hook reads HTTP/1.1 off
 * every client socket of the test process, so fetch, undici, node:http and raw sockets
 * are all checked alike, and no test can bypass it by choosing another client. A mocha
 * root hook fails the test that received a drifting answer.
 *
 * Answers not checked, each for its reason:
 * - to HEAD and OPTIONS: the document describes GET, and the other methods only by 405;
 *   HEAD has no body to check and OPTIONS answers 200 with `Allow` alone (see the document's text);
 * - to bytes with no readable request line (the gateway answers 400 `unreadable_request` from
 *   its parser's error handler): there is no path to check them against, and any server in a
 *   test, stand-ins included, may answer such bytes in its own way;
 * - cut off by a closed connection, or never sent (a socket destroyed, a flood never read):
 *   there is nothing whole to check.
 */

const conformance = new DocumentConformance(buildOpenApiDocument(PUBLIC_ROUTES));
const problems: string[] = [];
const arriving = new Set<Promise<void>>();

const UNCHECKED_METHODS = new Set(['HEAD', 'OPTIONS']);

/** How long the hook waits for answers still arriving when a test ends: a stream a test cut off never ends. */
const BODY_WAIT_MS = 2000;

/**
 * Checks one answer to `method target` against the document and records what differs;
 * answers to paths the document does not describe, and to unchecked methods, pass.
 */
export function checkAnswer(method: string, target: string, answer: RealAnswer): string[] {
  const path = pathOf(target);
  if (UNCHECKED_METHODS.has(method) || !conformance.describes(path)) return [];
  let found: string[];
  try {
    found = conformance.problems(path, answer);
  } catch (err: unknown) {
    found = [`could not be checked: ${String(err)}`];
  }
  if (found.length > 0) problems.push(`${method} ${target.slice(0, 200)} → ${answer.status}: ${found.join('; ')}`);
  return found;
}

/** The problems recorded since the last test ended, taken so they fail no test (for the hook's own tests). */
export function takeProblems(): string[] {
  return problems.splice(0);
}

/** One HTTP/1.1 message as read off the wire; the body (if kept) in latin1, one character a byte. */
interface Message {
  readonly startLine: string;
  readonly fields: ReadonlyArray<readonly [string, string]>;
  readonly body: string;
}

interface ReaderEvents {
  /** The start line, as soon as it is whole: whether to keep the body, or stop as it is no HTTP. */
  started(line: string): 'keep' | 'drop' | 'stop';
  /** Whether the message has a body by its framing (false: none whatever the headers say). */
  mayHaveBody(startLine: string): boolean;
  /** Whether a message without length reads until the connection ends (answers) or has no body (requests). */
  readonly untilClose: boolean;
  finished(message: Message): void;
}

/** Head lines of more than this are not an answer the hook can read: it stops reading that connection. */
const LINE_LIMIT = 1024 * 1024;

/**
 * Reads HTTP/1.1 messages one after another from a byte stream (RFC 9112 framing). Bytes are
 * kept as latin1 text, one character a byte, which V8 searches and slices fastest: a flood
 * test writes 20,000 requests at once.
 */
class MessageReader {
  private pending = '';
  private at = 0;
  private state: 'line' | 'head' | 'length' | 'chunkSize' | 'chunkData' | 'trailer' | 'untilClose' | 'stopped' = 'line';
  private startLine = '';
  private fields: Array<[string, string]> = [];
  private body = '';
  private keeping = false;
  private remaining = 0;

  constructor(private readonly events: ReaderEvents) {}

  /** Takes bytes as latin1 text; nothing is parsed until `read`. */
  feed(text: string): void {
    if (this.state === 'stopped') return;
    this.pending = this.pending.slice(this.at) + text;
    this.at = 0;
  }

  /** Parses what was fed, or only until `enough` holds. */
  read(enough: () => boolean = () => false): void {
    try {
      while (!enough() && this.step());
    } catch (_err: unknown) {
      this.state = 'stopped'; // framing the hook cannot follow: it reads this connection no further
    }
  }

  end(): void {
    if (this.state === 'untilClose') this.finish();
    this.stop();
  }

  stop(): void {
    this.state = 'stopped';
    this.pending = '';
  }

  get stopped(): boolean {
    return this.state === 'stopped';
  }

  /** One step of parsing; false when it needs more bytes. */
  private step(): boolean {
    switch (this.state) {
      case 'line': {
        const line = this.line();
        if (line === undefined) return false;
        if (line === '') return true; // blank lines between messages are allowed
        this.startLine = line;
        const next = this.events.started(line);
        if (next === 'stop') this.stop();
        else this.state = 'head';
        this.keeping = next === 'keep';
        return next !== 'stop';
      }
      case 'head': {
        const line = this.line();
        if (line === undefined) return false;
        if (line !== '') {
          const colon = line.indexOf(':');
          this.fields.push([line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim()]);
          return true;
        }
        const length = this.field('content-length');
        if (!this.events.mayHaveBody(this.startLine)) this.finish();
        else if (/\bchunked\b/i.test(this.field('transfer-encoding') ?? '')) this.state = 'chunkSize';
        else if (length !== undefined) {
          this.remaining = Number(length);
          this.state = 'length';
          if (this.remaining === 0) this.finish();
        } else if (this.events.untilClose) this.state = 'untilClose';
        else this.finish();
        return true;
      }
      case 'length':
      case 'chunkData':
      case 'untilClose': {
        const left = this.pending.length - this.at;
        const take = this.state === 'untilClose' ? left : Math.min(this.remaining, left);
        if (this.keeping) this.body += this.pending.slice(this.at, this.at + take);
        this.at += take;
        this.remaining -= take;
        if (this.state === 'untilClose' || this.remaining > 0) return false;
        if (this.state === 'length') this.finish();
        else this.state = 'chunkSize';
        return true;
      }
      case 'chunkSize': {
        const line = this.line();
        if (line === undefined) return false;
        if (line === '') return true; // the line end after a chunk's data
        this.remaining = Number.parseInt(line.split(';')[0] ?? '', 16);
        if (Number.isNaN(this.remaining)) throw new Error('not a chunk size');
        this.state = this.remaining === 0 ? 'trailer' : 'chunkData';
        return true;
      }
      case 'trailer': {
        const line = this.line();
        if (line === undefined) return false;
        if (line === '') this.finish();
        return true;
      }
      case 'stopped':
        return false;
    }
  }

  private field(name: string): string | undefined {
    return this.fields.find(([field]) => field === name)?.[1];
  }

  private line(): string | undefined {
    const end = this.pending.indexOf('\r\n', this.at);
    if (end < 0) {
      if (this.pending.length - this.at > LINE_LIMIT) throw new Error('line too long');
      return undefined;
    }
    const line = this.pending.slice(this.at, end);
    this.at = end + 2;
    return line;
  }

  private finish(): void {
    this.events.finished({ startLine: this.startLine, fields: this.fields, body: this.body });
    this.state = 'line';
    this.fields = [];
    this.body = '';
  }
}

const REQUEST_LINE = /^([A-Z]+) (\S+) HTTP\/1\.[01]$/;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})\b/;

/** What a client asked, in order; undefined for bytes that were no request. */
type Asked = { readonly method: string; readonly target: string } | undefined;

/** Reads the requests a client socket sends and the answers it receives, and checks each answer. */
function readConversation(socket: Socket): void {
  const asked: Asked[] = [];
  let sent = false;
  let answering: (() => void) | undefined;
  const requests = new MessageReader({
    started(line) {
      const match = REQUEST_LINE.exec(line);
      asked.push(match ? { method: match[1] ?? '', target: match[2] ?? '' } : undefined);
      return match ? 'drop' : 'stop';
    },
    mayHaveBody: () => true,
    untilClose: false,
    finished() {},
  });
  // A request is read only when an answer needs it: a flood test writes 20,000 at once and reads none.
  const question = (): Asked => {
    requests.read(() => asked.length > 0);
    return asked[0];
  };
  const answers = new MessageReader({
    started(line) {
      const status = Number(STATUS_LINE.exec(line)?.[1]);
      if (Number.isNaN(status)) return 'stop';
      if (status < 200 || !checked(question())) return 'drop';
      const settled = new Promise<void>((resolve) => {
        answering = resolve;
      });
      arriving.add(settled);
      void settled.then(() => arriving.delete(settled));
      return 'keep';
    },
    mayHaveBody(line) {
      const status = Number(STATUS_LINE.exec(line)?.[1]);
      return question()?.method !== 'HEAD' && status >= 200 && status !== 204 && status !== 304;
    },
    untilClose: true,
    finished({ startLine, fields, body }) {
      const status = Number(STATUS_LINE.exec(startLine)?.[1]);
      if (status < 200) return; // an interim answer: the final one follows
      const asking = question();
      asked.shift();
      if (asking !== undefined && checked(asking)) {
        const headers = new Headers();
        for (const [name, value] of fields) headers.append(name, value);
        checkAnswer(asking.method, asking.target, {
          status,
          headers,
          body: Buffer.from(body, 'latin1').toString('utf8'),
        });
      }
      settle();
    },
  });
  const settle = () => {
    answering?.();
    answering = undefined;
  };
  const heard = (chunk: unknown, encoding: unknown) => {
    if (requests.stopped) return;
    let text: string;
    if (typeof chunk === 'string')
      text = Buffer.from(chunk, isEncoding(encoding) ? encoding : 'utf8').toString('latin1');
    else if (chunk instanceof Uint8Array)
      text = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('latin1');
    else return;
    // Another protocol (Redis, TLS): nothing of it is read.
    if (!sent && !/^[A-Z]+ /.test(text.slice(0, 20))) {
      requests.stop();
      answers.stop();
    }
    sent = true;
    requests.feed(text);
  };
  const { write, end, push } = socket;
  socket.write = function (this: Socket, chunk: unknown, ...rest: unknown[]) {
    heard(chunk, rest[0]);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Socket['write'];
  socket.end = function (this: Socket, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== 'function') heard(chunk, rest[0]);
    return (end as (...args: unknown[]) => Socket).call(this, chunk, ...rest);
  } as Socket['end'];
  // What the socket reads reaches its stream through push, however the client consumes it.
  socket.push = function (this: Socket, chunk: unknown, encoding?: BufferEncoding) {
    if (chunk === null) answers.end();
    else if (Buffer.isBuffer(chunk) && !answers.stopped) {
      answers.feed(chunk.toString('latin1'));
      answers.read();
      if (answers.stopped) requests.stop();
    }
    return push.call(this, chunk, encoding);
  };
  socket.once('close', () => {
    answers.end();
    settle();
  });
}

/** Whether an answer to this request is checked against the document. */
function checked(asking: Asked): asking is NonNullable<Asked> {
  return asking !== undefined && !UNCHECKED_METHODS.has(asking.method) && conformance.describes(pathOf(asking.target));
}

function pathOf(target: string): string {
  return new URL(target, 'http://gateway.invalid').pathname;
}

function isEncoding(value: unknown): value is BufferEncoding {
  return typeof value === 'string' && Buffer.isEncoding(value);
}

// Every client socket, whichever library opens it, connects through Socket.prototype.connect;
// sockets a server accepts do not, so the gateway's own side of a connection is never read here.
const reading = new WeakSet<Socket>();
const connect = Socket.prototype.connect;
Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
  const socket = (connect as (...params: unknown[]) => Socket).apply(this, args);
  // After connect, which resets an own `write`.
  if (!reading.has(this)) {
    reading.add(this);
    readConversation(this);
  }
  return socket;
} as Socket['connect'];

export const mochaHooks: RootHookObject = {
  async afterEach(this: Context) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(arriving),
      new Promise((resolve) => {
        timer = setTimeout(resolve, BODY_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    const found = problems.splice(0);
    if (found.length === 0 || this.currentTest?.state === 'failed') return;
    const err = new Error(`answers that differ from the OpenAPI document:\n${found.slice(0, 10).join('\n')}`);
    // As in nockPolicy: fail this test and go on with the next.
    if (this.test instanceof Mocha.Hook) this.test.error(err);
    else throw err;
  },
};
