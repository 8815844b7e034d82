import type { UpstreamHttp } from '../upstream/upstreamHttp.js';

/** Statuses whose Response may carry no body (the Response constructor refuses one). */
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);

/** They describe the body as it came over the wire, before decoding. */
const WIRE_HEADERS = new Set(['content-encoding', 'content-length', 'transfer-encoding']);

/** graphql-request's `fetch`: the answer a Response built from the text read, no web stream over the socket. */
export function platformFetch(http: UpstreamHttp, deadline?: number): typeof fetch {
  return async (input, init) => {
    if (input instanceof Request) throw new TypeError('platform calls take a URL, not a Request');
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== 'string')
      throw new TypeError('platform calls carry a string body');
    const headers = Object.fromEntries(new Headers(init?.headers));
    const answer = await http.send(input, {
      method: init?.method === 'GET' ? 'GET' : 'POST',
      headers,
      ...(body ? { body } : {}),
      ...(deadline === undefined ? {} : { deadline }),
    });
    const responseHeaders = Object.entries(answer.headers).flatMap(([name, value]) =>
      WIRE_HEADERS.has(name) || value === undefined ? [] : [value].flat().map((one): [string, string] => [name, one]),
    );
    return new Response(NULL_BODY_STATUSES.has(answer.status) ? null : answer.text, {
      status: answer.status,
      statusText: answer.statusText,
      headers: responseHeaders,
    });
  };
}
