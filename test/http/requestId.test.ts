import assert from 'node:assert/strict';
import { createApp } from '../../src/app.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('X-Request-Id', () => {
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    server = await listen(createApp(fakeServices()));
  });
  after(async () => {
    await server.close();
  });

  /** A 401 (no key): an error envelope, which must carry the id in meta.requestId. */
  async function failedAnswer(headers: Record<string, string> = {}) {
    const res = await fetch(`${server.url}/v1/api/keywords?site=example.com`, { headers });
    const body = (await res.json()) as { meta: { requestId?: string } };
    return { status: res.status, header: res.headers.get('x-request-id'), metaId: body.meta.requestId };
  }

  it("keeps the caller's well-formed id, on the answer and in meta.requestId", async () => {
    for (const given of [
      'abc-123',
      'trace:4bf92f3577b34da6.a3ce929d',
      '550e8400-e29b-41d4-a716-446655440000',
      'x'.repeat(128),
    ]) {
      const answer = await failedAnswer({ 'x-request-id': given });
      assert.equal(answer.status, 401);
      assert.equal(answer.header, given);
      assert.equal(answer.metaId, given);
    }
  });

  it('replaces a malformed id with a new UUID', async () => {
    const keyLike = ['atl_Q5Yf2kLz8WcN3pRt7VbXm1HsJd4GqA6e0123ab', 'ATL_0', 'req-atl_x'];
    for (const given of [
      'has spaces',
      '-leading-dash',
      'x'.repeat(129),
      '<script>',
      'a"b',
      'id,other',
      'é',
      ...keyLike,
    ]) {
      const answer = await failedAnswer({ 'x-request-id': given });
      assert.match(answer.header ?? '', UUID, JSON.stringify(given));
      assert.equal(answer.metaId, answer.header);
    }
  });

  it('gives each request without an id a new UUID, on successes too', async () => {
    const first = await failedAnswer();
    const second = await failedAnswer();
    assert.match(first.header ?? '', UUID);
    assert.equal(first.metaId, first.header);
    assert.notEqual(first.header, second.header);
    for (const path of ['/healthz', '/v1/openapi.json', '/metrics', '/readyz', '/docs']) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 200, path);
      assert.match(res.headers.get('x-request-id') ?? '', UUID, path);
      await res.arrayBuffer();
    }
  });
});
