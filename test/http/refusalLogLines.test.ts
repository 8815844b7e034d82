import assert from 'node:assert/strict';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import type { Admission } from '../../src/limits/admission.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { asGrant, FIXED_NOW, fakeServices, testLedger } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, keyPrefixOf, testKey, verifyAnswer } from '../support/keys.js';

/**
 * Each refusal a caller can meet leaves exactly one log line, the request's own, with
 * its request id, status, reason, and the key prefix and organization when known.
 */

const KEY_SERVICE = 'http://key-service.test';
const PATH = '/v1/api/keywords?site=example.com';
const READER = testKey('log reader');
const WRITER = testKey('log writer');
const UNKNOWN = testKey('log unknown');
const EXPIRED = testKey('log expired');
const LIMITED = testKey('log limited');

describe('the log line of each refusal', () => {
  const written: string[] = [];
  let server: Awaited<ReturnType<typeof listen>>;
  let authenticator: KeyAuthenticator;

  before(async () => {
    const logger = pino({ level: 'info' }, { write: (line: string) => written.push(line) });
    authenticator = createKeyAuthenticator({
      keyService: createKeyServiceClient({ url: KEY_SERVICE, token: 'key-service-token', timeoutMs: 5000 }),
      ledger: testLedger(),
      now: () => FIXED_NOW,
      logger,
    });
    // org_limited has used its allowance; everyone else is allowed.
    const limiter: Admission = {
      async take(organizationId) {
        const allowed = organizationId !== 'org_limited';
        return asGrant({ allowed, limit: 10, remaining: allowed ? 9 : 0, resetSeconds: 30, windowSeconds: 60 });
      },
      available: () => true,
      async close() {},
    };
    server = await listen(createApp(fakeServices({ logger, authenticator, admission: limiter })));
  });
  after(async () => {
    await authenticator.close();
    await server.close();
  });

  const verifies = (key: string, status: number, body: object) =>
    nock(KEY_SERVICE)
      .post('/v1/keys/verify', { keyHash: keyHashOf(key) })
      .reply(status, body);

  it('one line per refusal, carrying reason, key prefix and organization when known', async () => {
    const scopes = [
      verifies(WRITER, 200, verifyAnswer(WRITER, { key: { permissions: ['write'] } })),
      verifies(UNKNOWN, 404, { error: 'unknown_key' }),
      verifies(EXPIRED, 200, verifyAnswer(EXPIRED, { key: { expiresAt: '2026-01-01T00:00:00.000Z' } })),
      verifies(LIMITED, 200, verifyAnswer(LIMITED, { key: { organizationId: 'org_limited' } })),
    ];
    const cases: Array<{
      id: string;
      headers: Record<string, string>;
      path?: string;
      method?: string;
      want: Record<string, unknown>;
    }> = [
      {
        id: 'r-missing',
        headers: {},
        want: { status: 401, reason: 'missing_key', keyPrefix: null, organizationId: null },
      },
      {
        id: 'r-malformed',
        headers: { authorization: 'Bearer atl_nope' },
        want: { status: 401, reason: 'malformed_key', keyPrefix: null },
      },
      {
        id: 'r-query',
        headers: {},
        path: `${PATH}&api_key=${READER}`,
        want: { status: 401, reason: 'key_in_query', keyPrefix: null },
      },
      {
        id: 'r-unknown',
        headers: { authorization: `Bearer ${UNKNOWN}` },
        want: { status: 401, reason: 'invalid_key', keyPrefix: keyPrefixOf(UNKNOWN) },
      },
      {
        id: 'r-expired',
        headers: { authorization: `Bearer ${EXPIRED}` },
        want: { status: 401, reason: 'expired_key', keyPrefix: keyPrefixOf(EXPIRED) },
      },
      {
        id: 'r-perm',
        headers: { authorization: `Bearer ${WRITER}` },
        want: { status: 403, reason: 'missing_permission', keyPrefix: keyPrefixOf(WRITER) },
      },
      {
        id: 'r-limited',
        headers: { authorization: `Bearer ${LIMITED}` },
        want: {
          status: 429,
          keyPrefix: keyPrefixOf(LIMITED),
          organizationId: 'org_limited',
          route: '/v1/api/keywords',
        },
      },
      { id: 'r-404', headers: {}, path: '/v1/api/nope', want: { status: 404, reason: 'route_not_found', route: null } },
      { id: 'r-405', headers: {}, method: 'DELETE', want: { status: 405, route: '/v1/api/keywords' } },
    ];
    for (const c of cases) {
      written.length = 0;
      const res = await fetch(`${server.url}${c.path ?? PATH}`, {
        method: c.method ?? 'GET',
        headers: { ...c.headers, 'x-request-id': c.id },
      });
      const body = (await res.json()) as { errors: Array<{ reason?: string }> };
      assert.equal(res.status, c.want.status, c.id);
      const lines = written.map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.equal(lines.length, 1, `${c.id}: one line, not ${written.join('')}`);
      const [line] = lines;
      assert.equal(line?.msg, 'request');
      assert.equal(line?.requestId, c.id);
      assert.equal(typeof line?.durationMs, 'number');
      for (const [field, value] of Object.entries(c.want)) assert.deepEqual(line?.[field], value, `${c.id}: ${field}`);
      // The log's reason is the one the caller was told.
      assert.equal(line?.reason, body.errors[0]?.reason, c.id);
      for (const key of [READER, WRITER, UNKNOWN, EXPIRED, LIMITED])
        assert.ok(!written.join('').includes(key), `${c.id}: no key text`);
    }
    for (const scope of scopes) scope.done();
  });
});
