import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable, Transform } from 'node:stream';
import { injectTraceHeaders } from '../telemetry/spans.js';
import { UpstreamResponse, UpstreamResponseHeaders } from './upstreamResponse.js';

/** What graphql-request passes to its `fetch` for a POST (it adds options fetch ignores). */
export interface UpstreamRequestInit {
  method?: string;
  headers?: Headers | Record<string, string>;
  body?: string | null;
  signal?: AbortSignal | null;
}

export type UpstreamFetch = (input: string | URL, init?: UpstreamRequestInit) => Promise<UpstreamResponse>;

export interface NodeHttpFetchOptions {
  /** A call not answered in full (body read and decoded) this long after it started fails with CallTimeoutError. */
  timeoutMs?: number;
}

/** A call that ran past NodeHttpFetchOptions.timeoutMs; named as AbortSignal.timeout's error is. */
export class CallTimeoutError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * The `fetch` of the upstream calls: graphql-request's platform calls and the key
 * service's verify and usage calls, over node:http(s) with a keep-alive agent instead
 * of the global fetch (undici). Measured by `npm run bench`
 * (the README's Performance section): the global fetch spent about as much CPU per platform
 * call as the rest of a cold request together, most of it in web streams it builds
 * for request and response bodies that are small strings here.
 *
 * It does what graphql-request needs of fetch and what fetch did for these calls:
 * method, headers and a string body out; status, headers and the body back as the
 * part of a Response graphql-request reads (UpstreamResponse); gzip/deflate/br answers
 * decoded; the caller's AbortSignal ends the call. Redirects are not followed: a GraphQL
 * endpoint that redirects is misconfigured, and its 3xx is reported like any other
 * unexpected status.
 *
 * The deadline (timeoutMs) is a timer of its own rather than an AbortSignal the caller
 * makes per call: an AbortController, and node:http's abort listener on its signal
 * (added and removed with every request), cost more CPU per call than the timer, which
 * is cleared with the call. Not AbortSignal.timeout either: its timer fires, and builds
 * a DOMException, even after the call has ended.
 */
export function createNodeHttpFetch(options: NodeHttpFetchOptions = {}): UpstreamFetch {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };
  const { timeoutMs } = options;

  return (input, init) =>
    new Promise<UpstreamResponse>((resolve, reject) => {
      // Cleared wherever the call settles. (No named helper closures here: tsx wraps each
      // in a `__name` call, a defineProperty on every call.)
      let timer: NodeJS.Timeout | undefined;
      // graphql-request passes the URL it has already parsed.
      const url = typeof input === 'string' ? new URL(input) : input;
      const secure = url.protocol === 'https:';
      const headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' };
      const given = init?.headers;
      (given instanceof Headers ? given : new Headers(given)).forEach((value, name) => {
        headers[name] = value;
      });
      // node:http has no OpenTelemetry hook loaded here (undici's is): carry the trace on.
      injectTraceHeaders(headers);
      const body = init?.body;
      // graphql-request's init reaches here through a cast (see the platform client): check it.
      if (body !== undefined && body !== null && typeof body !== 'string') {
        reject(new TypeError('platform requests carry a string body'));
        return;
      }
      const signal = init?.signal ?? undefined;
      const requestOptions = { method: init?.method ?? 'GET', headers, agent: secure ? agents.https : agents.http, ...(signal ? { signal } : {}) };
      const req = (secure ? httpsRequest : httpRequest)(url, requestOptions, (res) => {
        readBody(res).then(
          (text) => {
            clearTimeout(timer);
            resolve(new UpstreamResponse(res.statusCode ?? 0, res.statusMessage ?? '', new UpstreamResponseHeaders(res.headers), text));
          },
          (err: unknown) => {
            clearTimeout(timer);
            reject(err);
          },
        );
      });
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      if (timeoutMs !== undefined) {
        timer = setTimeout(() => {
          // Settled first, so that the errors destroy() causes (socket, body) are not what the caller sees.
          const err = new CallTimeoutError(`no answer within ${timeoutMs} ms`);
          reject(err);
          req.destroy(err);
        }, timeoutMs);
        timer.unref();
      }
      req.end(body ?? undefined);
    });
}

/**
 * The whole (decoded) body as text. Plain 'data'/'end' listeners rather than `for await`:
 * in a profile of platform calls, the async iterator and its end-of-stream watcher were
 * most of the cost of reading a body of a few kilobytes.
 */
function readBody(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const decoder = decoderFor(res.headers['content-encoding']);
    const source: Readable = decoder ? res.pipe(decoder) : res;
    if (decoder) res.on('error', (err) => decoder.destroy(err));
    const chunks: Buffer[] = [];
    source.on('data', (chunk: Buffer) => chunks.push(chunk));
    source.on('end', () => resolve((chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks)).toString('utf8')));
    source.on('error', reject);
    // Closed before its end without an error of its own: as `for await` reports it.
    source.on('close', () => {
      if (!source.readableEnded) reject(Object.assign(new Error('Premature close'), { code: 'ERR_STREAM_PREMATURE_CLOSE' }));
    });
  });
}

function decoderFor(contentEncoding: string | undefined): Transform | null {
  const encoding = (contentEncoding ?? '').trim().toLowerCase();
  if (encoding === 'gzip' || encoding === 'x-gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  return null;
}
