import assert from 'node:assert/strict';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { authFailure } from '../../src/auth/authFailures.js';
import type { Authenticator } from '../../src/auth/principal.js';
import { loggablePath } from '../../src/http/observeRequests.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { testKey } from '../support/keys.js';

/** Well-formed keys (atl_ + 32 + 6): one presented properly, one leaked into a URL. */
const HEADER_KEY = 'atl_Hk7s2LmQ9xWv4Rt1Yp3Zc8Nb6Jd5Fg0Aq2Ws9Ed';
const URL_KEY = 'atl_Uq9w8E7r6T5y4U3i2O1p0AsDfGhJkLzX1a2B3c';
/** A key's 38 characters without `atl_` (its checksum valid): still the whole secret. */
const BARE_BODY = testKey('bare body in a path').slice(4);

/** Accepts HEADER_KEY only, the way the real authenticator names a principal. */
function keyAuthenticator(): Authenticator {
  return {
    async authenticate({ authorization }) {
      if (authorization !== `Bearer ${HEADER_KEY}`) throw authFailure('invalid_key');
      return { organizationId: 'org_logs', keyId: 'key_logs', keyPrefix: HEADER_KEY.slice(0, 12) };
    },
  };
}

describe('request log lines', () => {
  const written: string[] = [];
  let server: Awaited<ReturnType<typeof listen>>;

  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    // Behind one proxy (a load balancer) that appends the caller's address to X-Forwarded-For.
    server = await listen(createApp(fakeServices({ logger, authenticator: keyAuthenticator(), trustedProxyHops: 1 })));
  });
  beforeEach(() => {
    written.length = 0;
  });
  after(async () => {
    await server.close();
  });

  function requestLines(): Array<Record<string, unknown>> {
    return written
      .map((chunk) => {
        // One write is one line: a single newline, at the end.
        assert.equal(chunk.indexOf('\n'), chunk.length - 1, `one line: ${JSON.stringify(chunk)}`);
        return JSON.parse(chunk) as Record<string, unknown>;
      })
      .filter((line) => line.msg === 'request');
  }

  it('a site holding newlines: one escaped JSON line, no key text', async () => {
    const scope = nock('http://platform.test')
      .post('/graphql')
      .reply(200, { data: { organization: { siteLookup: [] } } });
    const site = encodeURIComponent('evil.com\n{"level":60,"msg":"forged"}\r\nmore');
    const res = await fetch(`${server.url}/v1/api/keywords?site=${site}`, {
      headers: { authorization: `Bearer ${HEADER_KEY}`, 'x-request-id': 'log-test-1' },
    });
    assert.equal(res.status, 404);
    await res.arrayBuffer();
    scope.done();

    const all = written.join('');
    for (const secret of [HEADER_KEY, HEADER_KEY.slice(12), 'forged']) {
      assert.ok(!all.includes(secret), `the log holds ${secret}`);
    }
    const lines = requestLines();
    assert.equal(lines.length, 1);
    const [line] = lines;
    assert.deepEqual(
      {
        requestId: line?.requestId,
        route: line?.route,
        path: line?.path,
        status: line?.status,
        organizationId: line?.organizationId,
        keyPrefix: line?.keyPrefix,
      },
      {
        requestId: 'log-test-1',
        route: '/v1/api/keywords',
        path: '/v1/api/keywords',
        status: 404,
        organizationId: 'org_logs',
        keyPrefix: HEADER_KEY.slice(0, 12),
      },
    );
    assert.equal(typeof line?.durationMs, 'number');
  });

  it('a key pasted into the path is refused and redacted, however it is encoded', async () => {
    for (const path of [
      `/v1/api/${URL_KEY}`,
      `/v1/api/%61tl_${URL_KEY.slice(4)}`,
      `/v1/api/x%0Ay/${URL_KEY}`,
      `/v1/api/${BARE_BODY}`,
    ]) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 401);
      await res.arrayBuffer();
    }
    const lines = requestLines();
    assert.equal(lines.length, 4);
    assert.ok(!written.join('').includes(URL_KEY.slice(4)));
    assert.ok(!written.join('').includes(BARE_BODY));
    assert.deepEqual(
      lines.map((line) => line.path),
      ['/v1/api/[redacted]', '/v1/api/[redacted]', '/v1/api/x%0Ay/[redacted]', '/v1/api/[redacted]'],
    );
  });

  it('a caller who goes away before the answer: one line, with the status the gateway reached', async () => {
    const scope = nock('http://platform.test')
      .post('/graphql')
      .delay(300)
      .reply(200, { data: { organization: { siteLookup: [] } } });
    const gone = fetch(`${server.url}/v1/api/keywords?site=acme.com`, {
      headers: { authorization: `Bearer ${HEADER_KEY}`, 'x-request-id': 'log-test-gone' },
      signal: AbortSignal.timeout(50),
    });
    await assert.rejects(gone, { name: 'TimeoutError' });
    // The line is written once the gateway has its answer, the caller long gone.
    const deadline = Date.now() + 3000;
    while (requestLines().length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    scope.done();
    const lines = requestLines();
    assert.deepEqual(
      lines.map((line) => [line.requestId, line.status]),
      [['log-test-gone', 404]],
    );
    assert.ok(Number(lines[0]?.durationMs) >= 250, `duration ${lines[0]?.durationMs} ms covers the platform's wait`);
  });

  it('names the client address (resolved through the trusted proxies) and the user agent', async () => {
    const res = await fetch(`${server.url}/v1/api/keywords?site=acme.com`, {
      headers: { 'x-forwarded-for': '203.0.113.9, 198.51.100.7', 'user-agent': 'report-exporter/2.1' },
    });
    await res.arrayBuffer();
    const lines = requestLines();
    assert.deepEqual(
      lines.map((line) => [line.status, line.clientAddress, line.userAgent]),
      [[401, '198.51.100.7', 'report-exporter/2.1']],
    );
  });

  it('writes no info line for health checks, readiness checks and scrapes', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await fetch(`${server.url}${path}`);
      assert.equal(res.status, 200, path);
      await res.arrayBuffer();
    }
    const unknown = await fetch(`${server.url}/nothing-here`);
    await unknown.arrayBuffer();
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.deepEqual(
      requestLines().map((line) => line.path),
      ['/nothing-here'],
    );
  });

  it('bounds the logged path', () => {
    const logged = loggablePath(`/${'a'.repeat(5000)}`);
    assert.ok(logged.length <= 257);
    assert.ok(logged.endsWith('…'));
  });
});
