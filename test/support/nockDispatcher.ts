import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Dispatcher } from 'undici';

/**
 * nock intercepts node:http and the global fetch, not undici's `request`, which the
 * upstream clients use. This undici dispatcher, installed as the global one for the test
 * run (rootHooks.ts), sends calls to the tests' made-up upstream hosts (platform.test,
 * keys.test, ...) through node:http, where nock answers them, and calls to loopback
 * (in-test servers) through undici's own Agent, so those tests exercise undici itself.
 */
export class NockDispatcher extends Dispatcher {
  constructor(private readonly loopback: Dispatcher) {
    super();
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const origin = new URL(String(options.origin));
    if (isLoopback(origin.hostname)) return this.loopback.dispatch(options, handler);
    const { onRequestStart, onResponseStart, onResponseData, onResponseEnd, onResponseError } = handler;
    if (!onRequestStart || !onResponseStart || !onResponseData || !onResponseEnd || !onResponseError) {
      throw new TypeError('NockDispatcher takes handlers of undici 7 (onRequestStart ...)');
    }
    const req = httpRequest(new URL(options.path, origin), { method: options.method, headers: toHeaders(options.headers) });
    let settled = false;
    const fail = (err: Error) => {
      if (settled) return;
      settled = true;
      onResponseError.call(handler, controller, err);
    };
    const controller: Dispatcher.DispatchController = {
      aborted: false,
      paused: false,
      reason: null,
      abort(reason: Error) {
        req.destroy(reason);
        fail(reason);
      },
      pause() {},
      resume() {},
    };
    req.on('error', fail);
    req.on('response', (res) => {
      onResponseStart.call(handler, controller, res.statusCode ?? 0, res.headers, res.statusMessage);
      res.on('data', (chunk: Buffer) => {
        if (!settled) onResponseData.call(handler, controller, chunk);
      });
      res.on('end', () => {
        if (settled) return;
        settled = true;
        onResponseEnd.call(handler, controller, {});
      });
      res.on('error', fail);
    });
    onRequestStart.call(handler, controller, {});
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
