import assert from 'node:assert/strict';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { type LintFinding, redoclyFindings, spectralFindings } from './documentLinters.js';

const lines = (findings: LintFinding[]) =>
  findings.map((f) => `${f.linter} ${f.severity} ${f.rule} at ${f.where}: ${f.message}`);

describe('OpenAPI document: the standard linters pass clean', function () {
  this.timeout(30_000);

  for (const [name, options] of [
    ['servers /', {}],
    ['servers from PUBLIC_BASE_URL', { publicBaseUrl: 'https://api.seo-platform.test' }],
  ] as const) {
    const json = JSON.stringify(buildOpenApiDocument(PUBLIC_ROUTES, options));

    it(`Spectral spectral:oas: 0 errors, 0 warnings (${name})`, async () => {
      assert.deepEqual(lines(await spectralFindings(json)), []);
    });

    it(`Redocly recommended: 0 errors, 0 warnings (${name})`, async () => {
      assert.deepEqual(lines(await redoclyFindings(json)), []);
    });
  }

  it('the linters are not vacuous: a document with faults is reported by both', async () => {
    const broken = buildOpenApiDocument(PUBLIC_ROUTES);
    delete broken.info.contact;
    delete broken.info.license;
    const json = JSON.stringify(broken);
    assert.ok((await spectralFindings(json)).some((f) => f.rule === 'info-contact'));
    assert.ok((await redoclyFindings(json)).some((f) => f.rule === 'info-license'));
  });
});
