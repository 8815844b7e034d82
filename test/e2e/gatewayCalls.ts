import assert from 'node:assert/strict';

/** Real HTTP calls to a running gateway, and what the end-to-end tests check in its answers. */

export interface GatewayAnswer {
  readonly status: number;
  readonly headers: Headers;
  /** Parsed JSON; undefined for an empty body (a 304). */
  readonly body: unknown;
}

/** GET `path` with the key as a Bearer token (none when null). */
export async function callGateway(
  baseUrl: string,
  path: string,
  key: string | null,
  headers: Record<string, string> = {},
): Promise<GatewayAnswer> {
  const res = await fetch(`${baseUrl}${path}`, {
    headers: key === null ? headers : { authorization: `Bearer ${key}`, ...headers },
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** 200 with exactly `{ data, meta: {}, errors: [] }`. */
export function assertSuccess(answer: GatewayAnswer, data: unknown, what: string): void {
  assert.equal(answer.status, 200, `${what}: ${JSON.stringify(answer.body)}`);
  assert.deepEqual(answer.body, { data, meta: {}, errors: [] }, what);
}

/** The failure envelope with exactly this status, code and reason, and a message. */
export function assertFailure(
  answer: GatewayAnswer,
  status: number,
  code: string,
  reason: string | undefined,
  what: string,
): void {
  assert.equal(answer.status, status, `${what}: ${JSON.stringify(answer.body)}`);
  const body = answer.body as { errors?: Array<{ message?: unknown }> };
  const message = body.errors?.[0]?.message;
  assert.equal(typeof message, 'string', what);
  assert.deepEqual(
    answer.body,
    {
      data: null,
      meta: { requestId: answer.headers.get('x-request-id') },
      errors: [{ code, message, ...(reason === undefined ? {} : { reason }) }],
    },
    what,
  );
}

/** The sum of a Prometheus sample over every series whose labels include all of `labels`. */
export async function metricValue(baseUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const set = match[2] ?? '';
    if (Object.entries(labels).every(([label, value]) => set.includes(`${label}="${value}"`))) sum += Number(match[3]);
  }
  return sum;
}
