import assert from 'node:assert/strict';
import { request } from 'undici';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';
import { testKey } from '../support/keys.js';

/**
 * The README promises that the log never holds a key. A caller may put one anywhere: the
 * gateway as `npm start` runs it, behind one trusted proxy, gets keys in the user agent, in
 * X-Forwarded-For (which it logs as the client's address) and in the path, and writes lines
 * for each request with no key's body in any of them.
 */
describe('keys in any field never reach the log', function () {
  this.timeout(60_000);
  let gateway: GatewayChild;
  before(async () => {
    gateway = await startGatewayChild({ LOG_LEVEL: 'info', TRUSTED_PROXY_HOPS: '1' });
  });
  after(() => gateway.close());

  it('writes every request line with the keys redacted', async () => {
    const elsewhere = testKey('sent where no key belongs');
    const send = async (path: string, headers: Record<string, string>) => {
      const res = await request(`${gateway.url}${path}`, { headers });
      await res.body.arrayBuffer();
      return res.statusCode;
    };
    const statuses = [
      await send('/v1/api/keywords?site=example.com', {
        authorization: `Bearer ${gateway.payingKey}`,
        'user-agent': `sdk/1.0 key=${gateway.payingKey} other=${elsewhere}`,
        'x-request-id': 'ua-line',
      }),
      await send('/v1/api/keywords?site=example.com', {
        'x-forwarded-for': elsewhere,
        'x-request-id': 'forwarded-line',
      }),
      await send('/v1/api/keywords?site=example.com', {
        authorization: `Bearer ${gateway.payingKey}`,
        'x-forwarded-for': `${elsewhere.slice('atl_'.length)}`,
        'x-request-id': 'bare-line',
      }),
      await send(`/v1/api/${elsewhere}`, { 'x-request-id': 'path-line' }),
    ];
    assert.deepEqual(statuses, [200, 401, 200, 401]);
    await gateway.process.waitForOutput(/"requestId":"path-line"/, 10_000);
    const lines = gateway.process
      .stdout()
      .split('\n')
      .filter((line) => line.includes('"requestId"'));
    const byId = new Map(lines.map((line) => [JSON.parse(line).requestId as string, JSON.parse(line)]));
    assert.deepEqual(
      ['ua-line', 'forwarded-line', 'bare-line', 'path-line'].map((id) => byId.has(id)),
      [true, true, true, true],
    );
    assert.equal(byId.get('ua-line').userAgent, 'sdk/1.0 key=atl_[redacted] other=atl_[redacted]');
    assert.equal(byId.get('forwarded-line').clientAddress, 'atl_[redacted]');
    assert.equal(byId.get('bare-line').clientAddress, '[redacted]');
    const output = gateway.process.stdout() + gateway.process.stderr();
    for (const key of [gateway.payingKey, elsewhere]) {
      assert.ok(!output.includes(key.slice('atl_'.length)), 'a key body reached the output');
    }
  });
});
