import assert from 'node:assert/strict';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { NO_ORGANIZATION, NO_SITE, TWO_SITES } from '../fixtures/platformAnswers.js';
import { assertSafeFailure, type ServedApp, serveApp } from '../support/callApi.js';
import { PLATFORM_TOKEN, PLATFORM_URL } from '../support/fakeServices.js';
import { graphqlData, mockPlatform, unreachablePlatform } from '../support/platformMock.js';

const ROUTES = [
  { path: '/v1/api/rankings', operation: 'Rankings' },
  { path: '/v1/api/ai-visibility/summary', operation: 'AiVisibility' },
  { path: '/v1/api/keywords', operation: 'Keywords' },
  { path: '/v1/api/audit-issues', operation: 'LatestAudit' },
] as const;

/** Words only the platform knows: none may reach a consumer. */
const UPSTREAM_WORDS = ['Cannot query field', 'secretField', 'db-7.internal', 'ECONNREFUSED', 'BAD_USER_INPUT', 'boom'];

const errorOf = (body: unknown) =>
  (body as { errors: Array<{ code: string; message: string; reason?: string }> }).errors[0];

describe('route errors', () => {
  let app: ServedApp;
  let impatient: ServedApp;

  before(async () => {
    app = await serveApp();
    impatient = await serveApp({
      platform: createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 100 }),
    });
  });
  after(async () => {
    await app.close();
    await impatient.close();
  });

  for (const route of ROUTES) {
    describe(route.path, () => {
      it('answers 400 BAD_REQUEST for a missing, blank, whitespace-only or repeated site, asking nothing upstream', async () => {
        for (const query of [
          '',
          '?',
          '?days=3&limit=2',
          '?site=',
          '?site',
          '?site=%20%20',
          '?site=%09%0A%E3%80%80',
          '?site=a.com&site=b.com',
          '?site=a.com&site=a.com',
          '?site=&site=a.com',
        ]) {
          const answer = await app.call(`${route.path}${query}`);
          assert.equal(answer.status, 400, query);
          assertSafeFailure(answer, 'BAD_REQUEST');
          assert.match(errorOf(answer.body)?.reason ?? '', /^site_(missing|repeated)$/, query);
        }
      });

      it('answers 400 BAD_REQUEST asking for the exact domain when two sites match', async () => {
        const { scope, posted } = mockPlatform({ body: TWO_SITES });
        const answer = await app.call(`${route.path}?site=example`);
        scope.done();
        assert.equal(answer.status, 400);
        assertSafeFailure(answer, 'BAD_REQUEST');
        assert.match(errorOf(answer.body)?.message ?? '', /exact domain/);
        assert.equal(posted[0]?.operationName, route.operation);
      });

      it('answers 404 NOT_FOUND when no site of the organization matches', async () => {
        const { scope } = mockPlatform({ body: NO_SITE }, { body: NO_ORGANIZATION });
        const none = await app.call(`${route.path}?site=missing.example`);
        const noOrganization = await app.call(`${route.path}?site=missing.example`);
        scope.done();
        assert.equal(none.status, 404);
        assertSafeFailure(none, 'NOT_FOUND');
        assert.equal(noOrganization.status, 404);
        assertSafeFailure(noOrganization, 'NOT_FOUND');
      });

      it("answers another organization's site exactly as a missing one", async () => {
        // The platform scopes every read by the organization the gateway passes: org_b
        // asking for org_a's site gets no match, as org_a asking for a missing site does.
        const { scope, posted } = mockPlatform({ body: NO_SITE }, { body: NO_SITE });
        const headers = { 'x-request-id': 'same-request-id' };
        const missing = await app.call(`${route.path}?site=missing.example`, { key: 'key-org-a', headers });
        const foreign = await app.call(`${route.path}?site=owned-by-a.example`, { key: 'key-org-b', headers });
        scope.done();
        assert.deepEqual(
          posted.map((p) => p.variables.organizationId),
          ['org_a', 'org_b'],
        );
        assert.equal(foreign.status, missing.status);
        assert.equal(foreign.text, missing.text);
        assert.equal(foreign.headers.get('content-type'), missing.headers.get('content-type'));
        assert.ok(!foreign.text.includes('owned-by-a'));
      });

      it('answers 401 from the authentication seam before any platform call', async () => {
        for (const key of [null, 'not-a-known-key']) {
          const answer = await app.call(`${route.path}?site=example.com`, { key });
          assert.equal(answer.status, 401);
          assertSafeFailure(answer, 'UNAUTHORIZED');
        }
      });

      it('answers 502 UPSTREAM_ERROR, saying nothing of the upstream, when the platform fails', async () => {
        const unreachable = unreachablePlatform();
        const { scope } = mockPlatform(
          { status: 500, body: { errors: [{ message: 'boom at db-7.internal' }] } },
          { status: 502, body: '<html>db-7.internal</html>', headers: { 'content-type': 'text/html' } },
          { body: '{"data": {"organization": ' },
          {
            body: {
              data: null,
              errors: [
                { message: 'Cannot query field "secretField" on type "Site".', extensions: { code: 'BAD_USER_INPUT' } },
              ],
            },
          },
          { status: 401, body: '' },
          { body: graphqlData({ organization: { siteLookup: 'not a list' } }) },
          // Answers the schema forbids (siteLookup is a non-null list): a broken platform, not "no such site".
          { body: graphqlData({}) },
          { body: graphqlData({ organization: {} }) },
          { body: graphqlData({ organization: { siteLookup: null } }) },
        );
        for (let i = 0; i < 10; i++) {
          const answer = await app.call(`${route.path}?site=example.com`);
          assert.equal(answer.status, 502, `failure ${i}`);
          assertSafeFailure(answer, 'UPSTREAM_ERROR', UPSTREAM_WORDS);
          assert.ok(Number(answer.headers.get('retry-after')) > 0, 'a platform outage says when to retry');
        }
        unreachable.done();
        scope.done();
      });

      it('answers 504 UPSTREAM_TIMEOUT when the platform answers after the timeout', async () => {
        const { scope } = mockPlatform({ body: NO_SITE, delayMs: 600 });
        const answer = await impatient.call(`${route.path}?site=example.com`);
        scope.done();
        assert.equal(answer.status, 504);
        assertSafeFailure(answer, 'UPSTREAM_TIMEOUT', UPSTREAM_WORDS);
        assert.ok(Number(answer.headers.get('retry-after')) > 0, 'a platform outage says when to retry');
      });

      it('answers 503 SERVICE_UNAVAILABLE with Retry-After when the platform answers 429 or 503', async () => {
        const { scope } = mockPlatform(
          { status: 429, body: '', headers: { 'retry-after': '7' } },
          { status: 503, body: { errors: [{ message: 'boom' }] }, headers: { 'retry-after': '12' } },
          { status: 503, body: 'busy at db-7.internal', headers: { 'content-type': 'text/plain' } },
        );
        const retryAfter: Array<string | null> = [];
        for (let i = 0; i < 3; i++) {
          const answer = await app.call(`${route.path}?site=example.com`);
          assert.equal(answer.status, 503);
          assertSafeFailure(answer, 'SERVICE_UNAVAILABLE', UPSTREAM_WORDS);
          retryAfter.push(answer.headers.get('retry-after'));
        }
        scope.done();
        assert.deepEqual(retryAfter.slice(0, 2), ['7', '12']);
        assert.match(retryAfter[2] ?? '', /^[1-9]\d*$/, 'a default Retry-After when the platform gave none');
      });
    });
  }
});
