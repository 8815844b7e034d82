import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import nock from 'nock';
import { toApiError, UpstreamError, type UpstreamFailure } from '../../src/errors.js';
import { AiVisibilityDocument, LatestAuditDocument } from '../../src/generated/graphql.js';
import { createPlatformClient, type PlatformClient } from '../../src/platform/platformClient.js';
import { PLATFORM_TOKEN, PLATFORM_URL } from '../support/fakeServices.js';
import { graphqlData, mockPlatform, unreachablePlatform } from '../support/platformMock.js';

const VARIABLES = { organizationId: 'org_a', site: 'example.com' };
const ANSWER = { organization: { siteLookup: [{ id: 'site_1', aiVisibility: null }] } };

const upstream = (failure: UpstreamFailure, retryAfterSeconds?: number) => (err: unknown) => {
  assert.ok(err instanceof UpstreamError, `expected an UpstreamError, got ${String(err)}`);
  assert.equal(err.upstream, 'platform');
  assert.equal(err.failure, failure);
  assert.equal(err.retryAfterSeconds, retryAfterSeconds);
  return true;
};

describe('platform client', () => {
  let calls: Array<{ operation: string; outcome: string }>;
  let client: PlatformClient;
  const ask = () => client.request(AiVisibilityDocument, VARIABLES);

  beforeEach(() => {
    calls = [];
    client = createPlatformClient({
      url: PLATFORM_URL,
      token: PLATFORM_TOKEN,
      timeoutMs: 5000,
      onCall: (operation, _seconds, outcome) => calls.push({ operation, outcome }),
    });
  });

  it('posts the typed document with its variables and the service token, and returns data', async () => {
    const { scope, posted } = mockPlatform({ body: graphqlData(ANSWER) });
    assert.deepEqual(await ask(), ANSWER);
    scope.done();
    assert.equal(posted.length, 1);
    assert.equal(posted[0]?.authorization, `Bearer ${PLATFORM_TOKEN}`);
    assert.equal(posted[0]?.operationName, 'AiVisibility');
    assert.match(posted[0]?.query ?? '', /^\s*query AiVisibility\(/);
    assert.deepEqual(posted[0]?.variables, VARIABLES);
    assert.deepEqual(calls, [{ operation: 'AiVisibility', outcome: 'ok' }]);
  });

  it('posts exactly { query, variables, operationName } as JSON, each document with its own name', async () => {
    const platform = new URL(PLATFORM_URL);
    const sent: Array<{ body: string; headers: Record<string, string | string[] | undefined> }> = [];
    const scope = nock(platform.origin)
      .post(platform.pathname)
      .times(3)
      .reply(function (_uri, body) {
        sent.push({ body: typeof body === 'string' ? body : JSON.stringify(body), headers: this.req.headers });
        return [200, graphqlData(ANSWER), { 'content-type': 'application/json' }];
      });
    const auditVariables = { organizationId: 'org_a', site: 'other.com' };
    await ask();
    await client.request(LatestAuditDocument, auditVariables);
    await ask();
    scope.done();
    const bodies = sent.map((s) => JSON.parse(s.body) as Record<string, unknown>);
    assert.deepEqual(
      bodies.map((b) => Object.keys(b)),
      [
        ['query', 'variables', 'operationName'],
        ['query', 'variables', 'operationName'],
        ['query', 'variables', 'operationName'],
      ],
    );
    assert.deepEqual(bodies[0], {
      query: AiVisibilityDocument.toString(),
      variables: VARIABLES,
      operationName: 'AiVisibility',
    });
    assert.deepEqual(bodies[1], {
      query: LatestAuditDocument.toString(),
      variables: auditVariables,
      operationName: 'LatestAudit',
    });
    assert.deepEqual(bodies[2], bodies[0]);
    for (const { headers } of sent) {
      assert.equal(headers['content-type'], 'application/json');
      assert.equal(headers.accept, 'application/graphql-response+json, application/json');
      assert.equal(headers.authorization, `Bearer ${PLATFORM_TOKEN}`);
    }
    assert.deepEqual(
      calls.map((c) => c.operation),
      ['AiVisibility', 'LatestAudit', 'AiVisibility'],
    );
  });

  it('turns a GraphQL `errors` answer into bad_answer, even with partial data', async () => {
    const { scope } = mockPlatform(
      { body: { data: null, errors: [{ message: 'first above 200', extensions: { code: 'BAD_USER_INPUT' } }] } },
      { body: { data: ANSWER, errors: [{ message: 'partial' }] } },
    );
    await assert.rejects(() => ask(), upstream('bad_answer'));
    await assert.rejects(() => ask(), upstream('bad_answer'));
    scope.done();
    assert.deepEqual(calls, [
      { operation: 'AiVisibility', outcome: 'bad_answer' },
      { operation: 'AiVisibility', outcome: 'bad_answer' },
    ]);
  });

  it('turns a 5xx answer into bad_answer, with or without a JSON body', async () => {
    const { scope } = mockPlatform(
      { status: 500, body: { errors: [{ message: 'boom' }] } },
      { status: 502, body: '<html>Bad Gateway</html>', headers: { 'content-type': 'text/html' } },
      { status: 504, body: '' },
    );
    await assert.rejects(() => ask(), upstream('bad_answer'));
    await assert.rejects(() => ask(), upstream('bad_answer'));
    await assert.rejects(() => ask(), upstream('bad_answer'));
    scope.done();
  });

  it('turns a malformed 200 answer into bad_answer', async () => {
    const { scope } = mockPlatform(
      { body: '{"data": {"organization":' },
      { body: 'not json at all', headers: { 'content-type': 'text/plain' } },
      { body: { data: null } },
      { body: {} },
      { body: [ANSWER] },
      { body: { data: 'text' } },
      { body: '' },
    );
    for (let i = 0; i < 7; i++) await assert.rejects(() => ask(), upstream('bad_answer'), `reply ${i}`);
    scope.done();
  });

  it('turns a 401 to the service token into bad_answer (our configuration, not the caller)', async () => {
    const { scope } = mockPlatform({ status: 401, body: '' });
    await assert.rejects(() => ask(), upstream('bad_answer'));
    scope.done();
  });

  it('turns 429 and 503 into throttled, carrying Retry-After in seconds', async () => {
    const { scope } = mockPlatform(
      { status: 429, body: '', headers: { 'retry-after': '7' } },
      { status: 503, body: { errors: [{ message: 'overloaded' }] }, headers: { 'retry-after': '12' } },
      { status: 503, body: 'busy', headers: { 'content-type': 'text/plain' } },
      { status: 429, body: '', headers: { 'retry-after': '86400' } },
    );
    await assert.rejects(() => ask(), upstream('throttled', 7));
    await assert.rejects(() => ask(), upstream('throttled', 12));
    await assert.rejects(() => ask(), upstream('throttled', undefined));
    await assert.rejects(() => ask(), upstream('throttled', 300)); // clamped: no upstream sets a day's wait
    scope.done();
    assert.deepEqual(
      calls.map((c) => c.outcome),
      ['throttled', 'throttled', 'throttled', 'throttled'],
    );
  });

  it('reads a Retry-After given as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString();
    const { scope } = mockPlatform({ status: 503, body: '', headers: { 'retry-after': at } });
    await assert.rejects(
      () => ask(),
      (err: unknown) => {
        assert.ok(err instanceof UpstreamError && err.failure === 'throttled');
        const seconds = err.retryAfterSeconds ?? 0;
        assert.ok(seconds >= 25 && seconds <= 31, `about 30 s, got ${seconds}`);
        return true;
      },
    );
    scope.done();
  });

  it('turns a refused connection into unreachable', async () => {
    const scope = unreachablePlatform();
    await assert.rejects(() => ask(), upstream('unreachable'));
    scope.done();
    assert.deepEqual(calls, [{ operation: 'AiVisibility', outcome: 'unreachable' }]);
  });

  it('turns a real refused connection on loopback into unreachable', async () => {
    // A port that was just free and is closed again: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const local = createPlatformClient({
      url: `http://127.0.0.1:${port}/graphql`,
      token: PLATFORM_TOKEN,
      timeoutMs: 2000,
    });
    await assert.rejects(() => local.request(AiVisibilityDocument, VARIABLES), upstream('unreachable'));
  });

  it('turns an answer later than timeoutMs into timeout', async () => {
    const impatient = createPlatformClient({
      url: PLATFORM_URL,
      token: PLATFORM_TOKEN,
      // Generous, so that even a starved process reaches the platform before it: the answer comes later still.
      timeoutMs: 1000,
      onCall: (operation, _seconds, outcome) => calls.push({ operation, outcome }),
    });
    const { scope } = mockPlatform({ body: graphqlData(ANSWER), delayMs: 3000 });
    await assert.rejects(() => impatient.request(AiVisibilityDocument, VARIABLES), upstream('timeout'));
    scope.done();
    assert.deepEqual(calls, [{ operation: 'AiVisibility', outcome: 'timeout' }]);
  });

  it('turns an answer whose body is still arriving at timeoutMs into timeout', async () => {
    const impatient = createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 1000 });
    const platform = new URL(PLATFORM_URL);
    const scope = nock(platform.origin)
      .post(platform.pathname)
      .delayBody(3000)
      .reply(200, graphqlData(ANSWER), { 'content-type': 'application/json' });
    await assert.rejects(() => impatient.request(AiVisibilityDocument, VARIABLES), upstream('timeout'));
    scope.done();
  });

  it('keeps upstream details out of the error message shown to consumers (detail is for logs)', async () => {
    const { scope } = mockPlatform({ body: { errors: [{ message: 'secret internal detail' }] } });
    await assert.rejects(
      () => ask(),
      (err: unknown) => {
        assert.ok(err instanceof UpstreamError);
        // The detail may carry the upstream message: only logs read it, toApiError drops it.
        assert.match(err.detail, /secret internal detail/);
        const shown = toApiError(err);
        assert.equal(shown.code, 'UPSTREAM_ERROR');
        assert.ok(!shown.message.includes('secret') && !shown.message.includes('platform.test'));
        return true;
      },
    );
    scope.done();
  });
});
