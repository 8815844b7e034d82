import assert from 'node:assert/strict';
import nock from 'nock';
import { RECORDED_EXAMPLES } from '../../src/openapi/recordedExamples.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { recordExamples } from './recordExamples.js';

describe('OpenAPI document: examples are real answers over the demo data', function () {
  this.timeout(30_000);
  after(() => nock.enableNetConnect());

  it('re-recording them now gives exactly the committed ones (else run `npm run openapi:examples`)', async () => {
    assert.deepEqual(await recordExamples(), RECORDED_EXAMPLES);
  });

  it('the failures include every status the demo data can produce', () => {
    assert.deepEqual(Object.keys(RECORDED_EXAMPLES.failures).sort(), ['400', '401', '403', '404', '405']);
  });

  it('every operation has a success example, and the routes with a setup-required form show it', () => {
    for (const route of PUBLIC_ROUTES) {
      const success = RECORDED_EXAMPLES.success[route.operationId] ?? {};
      assert.ok(Object.keys(success).length > 0, route.operationId);
      assert.equal('setup_required' in success, route.path.includes('ai-visibility') || route.path.includes('audit'));
    }
  });
});
