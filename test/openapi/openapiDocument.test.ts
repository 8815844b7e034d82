import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { ParameterObject, ReferenceObject } from 'openapi3-ts/oas31';
import { createApp } from '../../src/app.js';
import { cacheStatusField } from '../../src/cache/cacheFields.js';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { fakeServices } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { DocumentConformance } from './documentConformance.js';

const PUBLIC_PATHS = ['/v1/api/rankings', '/v1/api/ai-visibility/summary', '/v1/api/keywords', '/v1/api/audit-issues'];

const asSpec = (value: unknown) => structuredClone(value) as Record<string, unknown>;
const openApiDocument = buildOpenApiDocument(PUBLIC_ROUTES);

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(asSpec(openApiDocument));
    assert.deepEqual(result.errors, undefined);
    assert.equal(result.valid, true);
    assert.equal(validator.version, '3.1');
  });

  it('the validator is not vacuous: a broken copy is refused', async () => {
    const broken = asSpec(openApiDocument) as { paths: Record<string, { get: { responses: unknown } }> };
    const rankings = broken.paths['/v1/api/rankings'];
    assert.ok(rankings);
    rankings.get.responses = 'none';
    const result = await new Validator().validate(broken);
    assert.equal(result.valid, false);
  });

  it('describes exactly the four routes, both key schemes, and the parameter limits', () => {
    assert.deepEqual(Object.keys(openApiDocument.paths ?? {}).sort(), [...PUBLIC_PATHS].sort());
    const schemes = openApiDocument.components?.securitySchemes ?? {};
    assert.deepEqual(schemes.bearerApiKey, { ...schemes.bearerApiKey, type: 'http', scheme: 'bearer' });
    assert.deepEqual(schemes.headerApiKey, {
      ...schemes.headerApiKey,
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
    const parameter = (path: string, name: string): ParameterObject | undefined =>
      (openApiDocument.paths?.[path]?.get?.parameters ?? []).find(
        (p: ParameterObject | ReferenceObject): p is ParameterObject => 'name' in p && p.name === name,
      );
    const limits = (p: ParameterObject | undefined) => {
      const schema = p?.schema;
      return schema === undefined || '$ref' in schema ? [] : [schema.default, schema.maximum];
    };
    assert.deepEqual(limits(parameter('/v1/api/rankings', 'days')), [7, 90]);
    assert.deepEqual(limits(parameter('/v1/api/rankings', 'limit')), [10, 100]);
    assert.deepEqual(limits(parameter('/v1/api/keywords', 'limit')), [50, 500]);
    for (const path of PUBLIC_PATHS) {
      assert.equal(parameter(path, 'site')?.required, true);
      const operation = openApiDocument.paths?.[path]?.get;
      assert.deepEqual(operation?.security, [{ bearerApiKey: [] }, { headerApiKey: [] }], path);
      assert.deepEqual(
        Object.keys(operation?.responses ?? {}).sort(),
        ['200', '304', '400', '401', '403', '404', '405', '408', '414', '429', '431', '500', '502', '503', '504'],
        path,
      );
    }
  });

  it('Cache-Status: the pattern matches every value the gateway writes, and nothing else', () => {
    const header = openApiDocument.components?.headers?.CacheStatus;
    const schema = header !== undefined && 'schema' in header ? header.schema : undefined;
    assert.ok(schema !== undefined && 'pattern' in schema && typeof schema.pattern === 'string');
    const pattern = new RegExp(schema.pattern);
    const answer = { body: '{}', etag: '"x"' };
    const written = [
      cacheStatusField({ answer, status: 'hit', ageSeconds: 0 }, 30),
      cacheStatusField({ answer, status: 'hit', ageSeconds: 30 }, 30),
      cacheStatusField({ answer, status: 'miss' }, 30),
      cacheStatusField({ answer, status: 'miss', collapsed: true }, 30),
      cacheStatusField({ answer, status: 'stale', ageSeconds: 70 }, 30),
      cacheStatusField({ answer, status: 'miss' }, 0),
    ];
    assert.deepEqual(written.slice(0, 3), ['gateway; hit; ttl=30', 'gateway; hit; ttl=0', 'gateway; fwd=miss']);
    for (const value of written) assert.match(value, pattern);
    for (const value of ['gateway; hit', 'hit', 'gateway; fwd=uri-miss', 'other; hit; ttl=3']) {
      assert.doesNotMatch(value, pattern);
    }
  });

  describe('the conformance check catches drift', () => {
    const conformance = new DocumentConformance(openApiDocument);
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
      status,
      headers: new Headers({ 'content-type': 'application/json', 'x-request-id': 'req-1', ...headers }),
      body: JSON.stringify(body),
    });
    const rateLimited = { 'ratelimit-policy': '"per-organization";q=10;w=60', ratelimit: '"per-organization";r=0;t=5' };
    const fresh = {
      ...rateLimited,
      etag: '"abc"',
      'cache-control': 'private, max-age=30',
      'cache-status': 'gateway; fwd=miss',
      vary: 'Authorization, X-API-Key',
    };
    const keywords = {
      site: 'example.com',
      keywords: [{ keyword: 'seo', position: 1, unranked: false, volume: 10, clusterLabel: null }],
    };

    it('accepts a conforming answer', () => {
      assert.deepEqual(
        conformance.problems('/v1/api/keywords', json(200, { data: keywords, meta: {}, errors: [] }, fresh)),
        [],
      );
    });

    it('refuses a payload with a field the document does not list', () => {
      const extra = { ...keywords, keywords: [{ ...keywords.keywords[0], rank: 1 }] };
      const problems = conformance.problems(
        '/v1/api/keywords',
        json(200, { data: extra, meta: {}, errors: [] }, fresh),
      );
      assert.equal(problems.length, 1);
      assert.match(problems[0] ?? '', /additional properties/);
    });

    it('refuses an error code that does not belong to the status', () => {
      const body = { data: null, meta: { requestId: 'req-1' }, errors: [{ code: 'FORBIDDEN', message: 'x' }] };
      const problems = conformance.problems('/v1/api/keywords', json(401, body, { 'www-authenticate': 'Bearer' }));
      assert.equal(problems.length, 1);
    });

    it('refuses a missing required header, and an undocumented status', () => {
      const body = {
        data: null,
        meta: { requestId: 'req-1' },
        errors: [{ code: 'RATE_LIMITED', message: 'x', reason: 'request_limit_reached' }],
      };
      assert.deepEqual(conformance.problems('/v1/api/keywords', json(429, body, rateLimited)), [
        'required header Retry-After is missing',
      ]);
      assert.deepEqual(conformance.problems('/v1/api/keywords', json(418, body)), [
        'status 418 is not documented for GET /v1/api/keywords',
      ]);
    });
  });

  describe('GET /v1/openapi.json', () => {
    let server: Awaited<ReturnType<typeof listen>>;
    before(async () => {
      server = await listen(createApp(fakeServices()));
    });
    after(async () => {
      await server.close();
    });

    it('serves the document without a key', async () => {
      const res = await fetch(`${server.url}/v1/openapi.json`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
      assert.ok(res.headers.get('x-request-id'));
      assert.deepEqual(await res.json(), JSON.parse(JSON.stringify(openApiDocument)));
    });

    it('is readable from any origin, also when the request names one; the API routes stay without CORS', async () => {
      for (const headers of [new Headers(), new Headers({ origin: 'https://viewer.example' })]) {
        const res = await fetch(`${server.url}/v1/openapi.json`, { headers });
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('access-control-allow-origin'), '*');
      }
      const api = await fetch(`${server.url}/v1/api/rankings?site=a.com`, {
        headers: { origin: 'https://viewer.example' },
      });
      assert.equal(api.headers.get('access-control-allow-origin'), null);
      const preflight = await fetch(`${server.url}/v1/api/rankings?site=a.com`, {
        method: 'OPTIONS',
        headers: { origin: 'https://viewer.example', 'access-control-request-method': 'GET' },
      });
      assert.equal(preflight.headers.get('access-control-allow-origin'), null);
      assert.equal(preflight.headers.get('access-control-allow-methods'), null);
    });

    it('names PUBLIC_BASE_URL as its server when set, else `/`', async () => {
      const own = await listen(createApp(fakeServices({ publicBaseUrl: 'https://api.seo-platform.test/v' })));
      try {
        const res = await fetch(`${own.url}/v1/openapi.json`);
        const served = (await res.json()) as { servers: Array<{ url: string }>; info: { contact: { url?: string } } };
        assert.deepEqual(
          served.servers.map((s) => s.url),
          ['https://api.seo-platform.test/v'],
        );
        assert.equal(served.info.contact.url, 'https://api.seo-platform.test/v/docs');
      } finally {
        await own.close();
      }
      const plain = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as {
        servers: Array<{ url: string }>;
      };
      assert.deepEqual(
        plain.servers.map((s) => s.url),
        ['/'],
      );
    });

    it('answers another method with 405 and Allow', async () => {
      const res = await fetch(`${server.url}/v1/openapi.json`, { method: 'POST' });
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
    });
  });
});
