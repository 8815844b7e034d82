import type { IncomingHttpHeaders } from 'node:http';

/**
 * The part of a fetch Response that is read of an upstream answer (the key service
 * client reads status, headers and text too). For a platform answer graphql-request reads
 * `status`, `ok`, `headers.get('Content-Type')` and `text()` once, and hands `headers`
 * on in a ClientError, where the platform client reads `headers.get('retry-after')`.
 * A real Response (undici) costs a Headers copy, a web ReadableStream for a body that
 * is already a string, and an async read back: more CPU per platform call than graphql's
 * parse and print together. This holds the decoded text and node's own header object.
 */
export class UpstreamResponse {
  readonly ok: boolean;
  readonly #body: string;

  constructor(
    readonly status: number,
    readonly statusText: string,
    readonly headers: UpstreamResponseHeaders,
    body: string,
  ) {
    this.ok = status >= 200 && status <= 299;
    this.#body = body;
  }

  text(): Promise<string> {
    return Promise.resolve(this.#body);
  }

  /** Rejects on malformed JSON, as Response.json() does, instead of throwing. */
  json(): Promise<unknown> {
    return this.text().then((text) => JSON.parse(text) as unknown);
  }
}

/**
 * Headers.get/has over node's parsed response headers (lower-case names, repeated
 * headers already joined by node, set-cookie kept as a list) without copying them.
 * The private field keeps the values out of JSON.stringify, as with a real Headers:
 * graphql-request stringifies the response into a ClientError's message.
 */
export class UpstreamResponseHeaders {
  readonly #headers: IncomingHttpHeaders;

  constructor(headers: IncomingHttpHeaders) {
    this.#headers = headers;
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    if (key === 'content-encoding' || key === 'content-length') return null; // they describe the body before decoding
    const value = this.#headers[key];
    if (typeof value === 'string') return value;
    return Array.isArray(value) ? value.join(', ') : null;
  }

  has(name: string): boolean {
    return this.get(name) !== null;
  }
}
