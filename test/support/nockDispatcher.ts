import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Dispatcher } from 'undici';

/**
 * nock intercepts node:http and the global fetch, not undici's `request`, which the
 * upstream clients use. This undici dispatcher, installed as the clients' one for the test
 * run (nockPolicy.ts), sends calls to the tests' made-up upstream hosts (platform.test,
 * keys.test, ...) through node:http, where nock answers them, and calls to loopback
 * (in-test servers) through the upstream's own undici Agent, so those tests exercise undici itself.
 */
export class NockDispatcher extends Dispatcher {
  constructor(private readonly loopback: Dispatcher) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = new URL(String(options.origin));
    if (isLoopback(origin.hostname)) return this.loopback.dispatch(options, handler);
    const events = toEvents(handler);
    const req = httpRequest(new URL(options.path, origin), {
      method: options.method,
      headers: toHeaders(options.headers),
    });
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      events.error(err);
    };
    req.on('error', fail);
    req.on('response', (res) => {
      events.start(res);
      res.on('data', (chunk: Buffer) => {
        if (!settled) events.data(chunk);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        events.end();
      });
      res.on('error', fail);
    });
    events.connect((reason = new Error('aborted')) => {
      req.destroy(reason);
      fail(reason);
    });
    const body = options.body;
    req.end(typeof body === 'string' || body instanceof Uint8Array ? body : undefined);
    return true;
  }

  override async close(): Promise<void> {}
  override async destroy(): Promise<void> {}
}

function isLoopback(hostname: string): boolean {
  return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
}

function toHeaders(headers: Dispatcher.DispatchOptions['headers']): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  if (headers === undefined || headers === null) return out;
  if (Array.isArray(headers)) {
    for (let i = 0; i + 1 < headers.length; i += 2) out[String(headers[i]).toLowerCase()] = String(headers[i + 1]);
    return out;
  }
  for (const [name, value] of Object.entries(headers)) if (value !== undefined) out[name.toLowerCase()] = value;
  return out;
}

interface ResponseEvents {
  connect(abort: (reason?: Error) => void): void;
  start(res: IncomingMessage): void;
  data(chunk: Buffer): void;
  end(): void;
  error(err: Error): void;
}

/** The handler's callbacks, in undici 7's form (onRequestStart ...) or the older one (onConnect ...) that `request` uses. */
function toEvents(handler: Dispatcher.DispatchHandler): ResponseEvents {
  const controller: Dispatcher.DispatchController = {
    aborted: false,
    paused: false,
    reason: null,
    abort: () => undefined,
    pause: () => undefined,
    resume: () => undefined,
  };
  if (handler.onResponseStart) {
    return {
      connect(abort) {
        controller.abort = (reason) => abort(reason);
        handler.onRequestStart?.(controller, {});
      },
      start: (res) => handler.onResponseStart?.(controller, res.statusCode ?? 0, res.headers, res.statusMessage),
      data: (chunk) => handler.onResponseData?.(controller, chunk),
      end: () => handler.onResponseEnd?.(controller, {}),
      error: (err) => handler.onResponseError?.(controller, err),
    };
  }
  return {
    connect: (abort) => handler.onConnect?.(abort),
    start: (res) => {
      const raw = res.rawHeaders.map((value) => Buffer.from(value));
      handler.onHeaders?.(res.statusCode ?? 0, raw, () => undefined, res.statusMessage ?? '');
    },
    data: (chunk) => {
      handler.onData?.(chunk);
    },
    end: () => handler.onComplete?.([]),
    error: (err) => handler.onError?.(err),
  };
}
