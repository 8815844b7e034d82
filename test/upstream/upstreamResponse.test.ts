import assert from 'node:assert/strict';
import { UpstreamResponse, UpstreamResponseHeaders } from '../../src/upstream/upstreamResponse.js';

const headers = (raw: Record<string, string | string[]>) => new UpstreamResponseHeaders(raw);

describe('platform response', () => {
  it('is ok exactly for 2xx statuses', () => {
    const ok = (status: number) => new UpstreamResponse(status, '', headers({}), '').ok;
    assert.deepEqual([199, 200, 204, 299, 300, 307, 429, 503].map(ok), [false, true, true, true, false, false, false, false]);
  });

  it('gives the body as text and as JSON, and rejects malformed JSON instead of throwing', async () => {
    const response = new UpstreamResponse(200, 'OK', headers({}), '{"data":{"ok":true}}');
    assert.equal(response.statusText, 'OK');
    assert.equal(await response.text(), '{"data":{"ok":true}}');
    assert.deepEqual(await response.json(), { data: { ok: true } });
    const malformed = new UpstreamResponse(200, 'OK', headers({}), '{"data":');
    await assert.rejects(malformed.json(), SyntaxError);
  });

  it('reads headers by any case of the name, joins repeated ones, and has no value for absent ones', () => {
    const h = headers({ 'content-type': 'application/json', 'retry-after': '7', 'set-cookie': ['a=1', 'b=2'] });
    assert.equal(h.get('Content-Type'), 'application/json');
    assert.equal(h.get('retry-after'), '7');
    assert.equal(h.get('set-cookie'), 'a=1, b=2');
    assert.equal(h.get('x-missing'), null);
    assert.equal(h.has('RETRY-AFTER'), true);
    assert.equal(h.has('x-missing'), false);
  });

  it('hides content-encoding and content-length, which describe the body before decoding', () => {
    const h = headers({ 'content-encoding': 'gzip', 'content-length': '42', 'content-type': 'application/json' });
    assert.equal(h.get('content-encoding'), null);
    assert.equal(h.get('Content-Length'), null);
    assert.equal(h.has('content-encoding'), false);
  });

  it('keeps header values out of JSON, as a fetch Headers does (graphql-request stringifies errors)', () => {
    const h = headers({ 'retry-after': '7' });
    assert.equal(JSON.stringify(h), JSON.stringify(new Headers({ 'retry-after': '7' })));
    assert.equal(JSON.stringify(h), '{}');
  });
});
