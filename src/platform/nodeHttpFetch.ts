import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';

/**
 * The `fetch` graphql-request uses for platform calls, over node:http(s) with a
 * keep-alive agent instead of the global fetch (undici). Measured by `npm run bench`
 * (the README's Performance section): the global fetch spent about as much CPU per platform
 * call as the rest of a cold request together, most of it in web streams it builds
 * for request and response bodies that are small strings here.
 *
 * It does what graphql-request needs of fetch and what fetch did for these calls:
 * method, headers and a string body out; status, headers and the body back as a
 * Response; gzip/deflate/br answers decoded; the caller's AbortSignal ends the call.
 * Redirects are not followed: a GraphQL endpoint that redirects is misconfigured,
 * and its 3xx is reported like any other unexpected status.
 */
export function createNodeHttpFetch(): typeof fetch {
  const agents = { http: new HttpAgent({ keepAlive: true }), https: new HttpsAgent({ keepAlive: true }) };

  return (input, init) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const secure = url.protocol === 'https:';
      const headers: Record<string, string> = { 'accept-encoding': 'gzip, deflate, br' };
      new Headers(init?.headers).forEach((value, name) => {
        headers[name] = value;
      });
      const body = init?.body;
      if (body !== undefined && body !== null && typeof body !== 'string') {
        reject(new TypeError('platform requests carry a string body'));
        return;
      }
      const signal = init?.signal ?? undefined;
      const options = { method: init?.method ?? 'GET', headers, agent: secure ? agents.https : agents.http, ...(signal ? { signal } : {}) };
      const req = (secure ? httpsRequest : httpRequest)(url, options, (res) => {
        readBody(res).then(
          (text) => resolve(toResponse(res, text)),
          (err: unknown) => reject(err),
        );
      });
      req.on('error', reject);
      req.end(body ?? undefined);
    });
}

/** Statuses whose Response may not carry a body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

function toResponse(res: IncomingMessage, text: string): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    if (name === 'content-encoding' || name === 'content-length') continue; // the body is decoded
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const item of value) headers.append(name, item);
  }
  const status = res.statusCode ?? 0;
  return new Response(NULL_BODY_STATUSES.has(status) ? null : text, { status, statusText: res.statusMessage ?? '', headers });
}

async function readBody(res: IncomingMessage): Promise<string> {
  const encoding = String(res.headers['content-encoding'] ?? '').trim().toLowerCase();
  const decoder = encoding === 'gzip' || encoding === 'x-gzip' ? createGunzip() : encoding === 'deflate' ? createInflate() : encoding === 'br' ? createBrotliDecompress() : null;
  const source: Readable = decoder ? res.pipe(decoder) : res;
  if (decoder) res.on('error', (err) => decoder.destroy(err));
  const chunks: Buffer[] = [];
  for await (const chunk of source) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
