import assert from 'node:assert/strict';
import nock from 'nock';
import { createApp } from '../../src/app.js';
import type { Authenticator, Principal } from '../../src/auth/principal.js';
import { ApiError, UpstreamError } from '../../src/errors.js';
import type { Admission } from '../../src/limits/admission.js';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { listenHardened, rawExchange } from '../http/listenHardened.js';
import { asGrant, fakeServices, PLATFORM_TOKEN, PLATFORM_URL, unlimitedAdmission } from '../support/fakeServices.js';
import { DocumentConformance, documentedStatuses, type RealAnswer } from './documentConformance.js';
import { ROUTE_FIXTURES, type RouteFixture } from './platformFixtures.js';

/**
 * Real answers of every route, each checked against the document: success and
 * setup-required payloads, and every documented error status. At the end, every
 * status the document declares must have been seen (304 only once the build
 * answers conditional requests).
 */

const principal = (organizationId: string): Principal => ({
  organizationId,
  keyId: `key_${organizationId}`,
  keyPrefix: 'atl_12345678',
});

/** Bearer tokens that steer the fakes into each failure. */
function scenarioAuthenticator(): Authenticator {
  return {
    async authenticate({ authorization }) {
      const token = authorization?.replace(/^Bearer\s+/i, '');
      switch (token) {
        case 'ok':
          return principal('org_ok');
        case 'limited':
          return principal('org_limited');
        case 'limiter-down':
          return principal('org_limiter_down');
        case 'forbidden':
          throw new ApiError('FORBIDDEN', 'The key lacks read.', { reason: 'missing_permission' });
        case 'key-service-down':
          throw new UpstreamError('key-service', 'unreachable', 'connect ECONNREFUSED');
        case 'broken':
          throw new TypeError('a bug');
        default:
          throw new ApiError('UNAUTHORIZED', 'A valid API key is required.', {
            reason: 'missing_key',
            headers: { 'WWW-Authenticate': 'Bearer' },
          });
      }
    },
  };
}

function scenarioLimiter(): Admission {
  const unlimited = unlimitedAdmission();
  return {
    async take(organizationId) {
      if (organizationId === 'org_limited') {
        return asGrant({ allowed: false, limit: 10, remaining: 0, resetSeconds: 42, windowSeconds: 60 });
      }
      if (organizationId === 'org_limiter_down') {
        throw new ApiError('SERVICE_UNAVAILABLE', 'The request limit cannot be enforced. Retry later.', {
          reason: 'limiter_unavailable',
          headers: { 'Retry-After': '2' },
        });
      }
      return unlimited.take(organizationId, 0);
    },
    available: () => true,
    async close() {},
  };
}

describe('OpenAPI document: real answers conform', () => {
  const document = buildOpenApiDocument(PUBLIC_ROUTES);
  const conformance = new DocumentConformance(document);
  const seen = new Set<string>();
  let producesNotModified = false;
  let server: Awaited<ReturnType<typeof listenHardened>>;
  /** The same app behind a server that gives up on a request's headers quickly (408). */
  let impatient: Awaited<ReturnType<typeof listenHardened>>;

  /** The same app with a platform deadline short enough for the 504 case: the others get one a loaded machine meets. */
  let hurried: Awaited<ReturnType<typeof listenHardened>>;

  before(async () => {
    const appWithDeadline = (timeoutMs: number) =>
      createApp(
        fakeServices({
          authenticator: scenarioAuthenticator(),
          admission: scenarioLimiter(),
          platform: createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs }),
        }),
      );
    const app = appWithDeadline(5000);
    server = await listenHardened(app);
    impatient = await listenHardened(app, { headersTimeoutMs: 300, requestTimeoutMs: 300, timeoutCheckIntervalMs: 50 });
    hurried = await listenHardened(appWithDeadline(150));
  });
  after(async () => {
    await server.close();
    await impatient.close();
    await hurried.close();
  });

  async function answer(
    path: string,
    query: string,
    headers: Record<string, string> = {},
    method = 'GET',
    via = server,
  ): Promise<RealAnswer> {
    const res = await fetch(`${via.url}${path}?${query}`, { headers, method });
    return { status: res.status, headers: res.headers, body: await res.text() };
  }

  function assertConforms(path: string, real: RealAnswer, expectedStatus: number): void {
    assert.equal(real.status, expectedStatus, `GET ${path}: ${real.body}`);
    assert.deepEqual(conformance.problems(path, real), [], `GET ${path} → ${real.status}`);
    seen.add(`${path} ${real.status}`);
  }

  function platformAnswers(fixture: RouteFixture, data: unknown, optional = false) {
    const interceptor = nock('http://platform.test').post(
      '/graphql',
      (body: { query?: string }) => body.query?.includes(`query ${fixture.operation}`) === true,
    );
    if (optional) interceptor.optionally();
    return interceptor.reply(200, { data });
  }

  // Suites run in order, after the outer suite's own tests: the coverage check comes last.
  for (const fixture of ROUTE_FIXTURES) {
    describe(`GET ${fixture.path}`, () => {
      it('200: the payload conforms, and a conditional request gets 304 when the build supports it', async () => {
        const scope = platformAnswers(fixture, fixture.success);
        const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' });
        assertConforms(fixture.path, real, 200);
        scope.done();
        const etag = real.headers.get('etag');
        if (etag !== null) {
          producesNotModified = true;
          // A cached answer needs no platform call; an uncached one does: allow either.
          platformAnswers(fixture, fixture.success, true);
          const conditional = await answer(fixture.path, fixture.query, {
            authorization: 'Bearer ok',
            'if-none-match': etag,
          });
          assertConforms(fixture.path, conditional, 304);
          nock.cleanAll();
        }
      });

      if (fixture.setupRequired !== undefined) {
        it('200: the setup-required form conforms', async () => {
          const scope = platformAnswers(fixture, fixture.setupRequired);
          const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' });
          assertConforms(fixture.path, real, 200);
          assert.equal((JSON.parse(real.body) as { data: { setup_required?: boolean } }).data.setup_required, true);
          scope.done();
        });
      }

      it('400: missing site', async () => {
        assertConforms(fixture.path, await answer(fixture.path, '', { authorization: 'Bearer ok' }), 400);
      });

      it('401: no key, with WWW-Authenticate', async () => {
        assertConforms(fixture.path, await answer(fixture.path, fixture.query), 401);
      });

      it('403: a key that may not read', async () => {
        assertConforms(
          fixture.path,
          await answer(fixture.path, fixture.query, { authorization: 'Bearer forbidden' }),
          403,
        );
      });

      it('404: no such site in the organization', async () => {
        const scope = platformAnswers(fixture, fixture.noSite);
        assertConforms(fixture.path, await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' }), 404);
        scope.done();
      });

      it('405: another method, with Allow', async () => {
        const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' }, 'DELETE');
        assertConforms(fixture.path, real, 405);
      });

      it('408: a request whose headers never finish', async () => {
        const raw = await rawExchange(
          impatient.port,
          `GET ${fixture.path}?${fixture.query} HTTP/1.1\r\nHost: localhost\r\n`,
        );
        assertConforms(fixture.path, parseRawAnswer(raw), 408);
      });

      it('414: a URL longer than 8 KiB', async () => {
        const real = await answer(fixture.path, `site=${'a'.repeat(9000)}`, { authorization: 'Bearer ok' });
        assertConforms(fixture.path, real, 414);
      });

      it('429: the request limit is used up, with Retry-After and RateLimit fields', async () => {
        const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer limited' });
        assertConforms(fixture.path, real, 429);
        assert.equal(real.headers.get('retry-after'), '42');
      });

      it('431: headers larger than the server accepts', async () => {
        const raw = await rawExchange(
          server.port,
          `GET ${fixture.path}?${fixture.query} HTTP/1.1\r\nHost: localhost\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`,
        );
        assertConforms(fixture.path, parseRawAnswer(raw), 431);
      });

      it('500: an unexpected failure, without details', async () => {
        const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer broken' });
        assertConforms(fixture.path, real, 500);
        assert.doesNotMatch(real.body, /a bug/);
      });

      it('502: the platform fails', async () => {
        const scope = nock('http://platform.test').post('/graphql').reply(500, 'upstream exploded at db-7.internal');
        const real = await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' });
        assertConforms(fixture.path, real, 502);
        assert.doesNotMatch(real.body, /db-7|exploded/);
        scope.done();
      });

      it('503: platform busy, key service down, limiter down — each with Retry-After', async () => {
        const scope = nock('http://platform.test').post('/graphql').reply(503, 'busy', { 'Retry-After': '7' });
        assertConforms(fixture.path, await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' }), 503);
        scope.done();
        assertConforms(
          fixture.path,
          await answer(fixture.path, fixture.query, { authorization: 'Bearer key-service-down' }),
          503,
        );
        assertConforms(
          fixture.path,
          await answer(fixture.path, fixture.query, { authorization: 'Bearer limiter-down' }),
          503,
        );
      });

      it('504: the platform does not answer in time', async () => {
        const scope = nock('http://platform.test').post('/graphql').delay(600).reply(200, { data: fixture.success });
        const late = await answer(fixture.path, fixture.query, { authorization: 'Bearer ok' }, 'GET', hurried);
        assertConforms(fixture.path, late, 504);
        scope.done();
      });
    });
  }

  describe('the document as a whole', () => {
    it('rankings: `days` default and maximum are the ones the document states', async () => {
      const fixture = ROUTE_FIXTURES[0];
      assert.ok(fixture);
      const days = document.paths?.[fixture.path]?.get?.parameters?.find((p) => 'name' in p && p.name === 'days');
      assert.ok(days !== undefined && 'schema' in days && days.schema !== undefined && !('$ref' in days.schema));
      for (const [query, expected] of [
        ['site=example.com', days.schema.default],
        ['site=example.com&days=100000', days.schema.maximum],
      ] as const) {
        const scope = platformAnswers(fixture, fixture.success);
        const real = await answer(fixture.path, query, { authorization: 'Bearer ok' });
        assert.equal((JSON.parse(real.body) as { data: { days: number } }).data.days, expected);
        scope.done();
      }
    });

    it('every status the document declares was answered by a real request', () => {
      const missing = documentedStatuses(document)
        .filter(({ status }) => producesNotModified || status !== 304)
        .filter(({ path, status }) => !seen.has(`${path} ${status}`))
        .map(({ path, status }) => `${path} ${status}`);
      assert.deepEqual(missing, []);
    });
  });
});

/** A raw HTTP/1.1 answer → status, headers and body. */
function parseRawAnswer(raw: string): RealAnswer {
  const split = raw.indexOf('\r\n\r\n');
  assert.ok(split > 0, `not an HTTP answer: ${JSON.stringify(raw.slice(0, 80))}`);
  const [statusLine = '', ...lines] = raw.slice(0, split).split('\r\n');
  const headers = new Headers();
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: raw.slice(split + 4) };
}
