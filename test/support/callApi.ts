import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import type { Services } from '../../src/services.js';
import { fakeServices, PLATFORM_TOKEN, PLATFORM_URL } from './fakeServices.js';
import { listen } from './http.js';

export interface ApiAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body (undefined when it is empty). */
  readonly body: unknown;
}

export interface ServedApp {
  /** GET (or `method`) a path with the given bearer key (none when `key` is null). */
  call(
    path: string,
    options?: { key?: string | null; method?: string; headers?: Record<string, string> },
  ): Promise<ApiAnswer>;
  close(): Promise<void>;
}

/**
 * createApp(fakeServices(overrides)) on a loopback port. The platform client waits up to
 * 5 s unless a test passes its own, so a busy machine never turns a prompt nock reply
 * into a 504; timeout tests pass a client with a short timeoutMs.
 */
export async function serveApp(overrides: Partial<Services> = {}): Promise<ServedApp> {
  const platform = createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 5000 });
  const server = await listen(createApp(fakeServices({ platform, ...overrides })));
  return {
    async call(path, { key = 'key-org-a', method = 'GET', headers = {} } = {}) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: key === null ? headers : { authorization: `Bearer ${key}`, ...headers },
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, text, body: text === '' ? undefined : JSON.parse(text) };
    },
    close: () => server.close(),
  };
}

/**
 * The usual route-test setup as mocha hooks: no network but loopback, one served app for
 * the suite, nock cleaned after each test. Returns a getter for the app.
 */
export function useServedApp(overrides: Partial<Services> = {}): () => ServedApp {
  let app: ServedApp | undefined;
  before(async () => {
    app = await serveApp(overrides);
  });
  after(async () => {
    await app?.close();
  });
  return () => {
    if (!app) throw new Error('the served app is only there inside tests');
    return app;
  };
}

const PLATFORM_HOST = new URL(PLATFORM_URL).hostname;

/**
 * A failure body says nothing about upstreams: no host, no stack frame, none of the
 * upstream's own words (`upstreamWords`), and exactly the failure envelope's fields.
 */
export function assertSafeFailure(answer: ApiAnswer, code: string, upstreamWords: readonly string[] = []): void {
  assert.equal(answer.headers.get('content-type')?.startsWith('application/json'), true);
  assert.ok(!answer.text.includes(PLATFORM_HOST), `body names the platform host: ${answer.text}`);
  assert.ok(!/\bat .+:\d+:\d+/.test(answer.text), `body holds a stack frame: ${answer.text}`);
  assert.ok(!/graphql/i.test(answer.text), `body mentions GraphQL: ${answer.text}`);
  for (const word of upstreamWords) assert.ok(!answer.text.includes(word), `body repeats the upstream's "${word}"`);
  const body = answer.body as { data: unknown; meta: Record<string, unknown>; errors: Array<Record<string, unknown>> };
  assert.deepEqual(Object.keys(body).sort(), ['data', 'errors', 'meta']);
  assert.equal(body.data, null);
  assert.equal(typeof body.meta.requestId, 'string');
  assert.equal(body.meta.requestId, answer.headers.get('x-request-id'));
  assert.deepEqual(Object.keys(body.meta), ['requestId']);
  assert.equal(body.errors.length, 1);
  const [entry] = body.errors;
  assert.equal(entry?.code, code);
  assert.equal(typeof entry?.message, 'string');
  for (const field of Object.keys(entry ?? {}))
    assert.ok(['code', 'message', 'reason'].includes(field), `extra field ${field}`);
}
