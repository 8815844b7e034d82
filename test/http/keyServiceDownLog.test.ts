import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { FIXED_NOW, fakeServices, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, keyPrefixOf, testKey } from '../support/keys.js';

/**
 * A key service that cannot answer makes authentication fail closed with 503: a refusal
 * for now, like a busy one. Each such request leaves its one request line with the
 * reason the caller was told, and no error line with a stack, whatever broke.
 */

const KEY_SERVICE = 'http://key-service.test';
const PATH = '/v1/api/keywords?site=example.com';

describe('the log of a 503 from a key service that is down', () => {
  const written: string[] = [];
  let server: Awaited<ReturnType<typeof listen>>;
  const authenticators: KeyAuthenticator[] = [];

  const serve = async (keyServiceUrl: string) => {
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    const authenticator = createKeyAuthenticator({
      keyService: createKeyServiceClient({ url: keyServiceUrl, token: 'key-service-token', timeoutMs: 100 }),
      ledger: testLedger(),
      now: () => FIXED_NOW,
      logger,
    });
    authenticators.push(authenticator);
    server = await listen(createApp(fakeServices({ logger, authenticator })));
  };

  /** Asks once with `key` and returns the status, the reason told, and every log line written meanwhile. */
  const ask = async (key: string) => {
    written.length = 0;
    const res = await fetch(`${server.url}${PATH}`, { headers: { authorization: `Bearer ${key}` } });
    const body = (await res.json()) as { errors: Array<{ reason?: string }> };
    return {
      res,
      reason: body.errors[0]?.reason,
      lines: written.map((line) => JSON.parse(line) as Record<string, unknown>),
    };
  };

  afterEach(async () => {
    for (const authenticator of authenticators.splice(0)) await authenticator.close();
    await server.close();
  });

  const failures: Array<[what: string, intercept: (scope: nock.Interceptor) => nock.Scope]> = [
    [
      'refuses the connection',
      (verify) => verify.replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
    ],
    ['answers 500', (verify) => verify.reply(500, { error: 'internal' })],
    ['answers something else than the contract', (verify) => verify.reply(200, { unexpected: true })],
    ['does not answer in time', (verify) => verify.delay(1000).reply(200, {})],
    ['is busy (503 with Retry-After)', (verify) => verify.reply(503, '', { 'Retry-After': '3' })],
  ];

  for (const [what, intercept] of failures) {
    it(`when the key service ${what}: one request line with the reason, no stack`, async () => {
      await serve(KEY_SERVICE);
      const key = testKey(`down ${what}`);
      const scope = intercept(nock(KEY_SERVICE).post('/v1/keys/verify', { keyHash: keyHashOf(key) }));
      const { res, reason, lines } = await ask(key);
      scope.done();
      assert.equal(res.status, 503);
      assert.ok(res.headers.get('retry-after'));
      assert.equal(reason, 'key_service_unavailable');
      assert.equal(lines.length, 1, `one line, not ${written.join('')}`);
      const [line] = lines;
      assert.equal(line?.msg, 'request');
      assert.equal(line?.status, 503);
      assert.equal(line?.reason, 'key_service_unavailable');
      assert.equal(line?.keyPrefix, keyPrefixOf(key));
      assert.ok(!written.join('').includes('stack'), 'no stack');
      assert.ok(!written.join('').includes(key), 'no key text');
    });
  }

  it('when nothing listens where the key service should be: the same one line', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await serve(`http://127.0.0.1:${port}`);
    const { res, lines } = await ask(testKey('down nothing listens'));
    assert.equal(res.status, 503);
    assert.deepEqual(
      lines.map((line) => [line.msg, line.status, line.reason]),
      [['request', 503, 'key_service_unavailable']],
    );
    assert.ok(!written.join('').includes('stack'));
  });
});
