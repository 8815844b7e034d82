import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CODE_BY_REASON, ERROR_CODES, ERROR_REASONS, reasonsOf, STATUS_BY_CODE } from '../../src/errors.js';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { DocumentConformance } from './documentConformance.js';

/**
 * Fails when the server can answer a code or reason the document does not list:
 * every code and reason the source can put in an error, each one in the response of
 * its status on every operation.
 */

const document = buildOpenApiDocument(PUBLIC_ROUTES);
const conformance = new DocumentConformance(document);

function enumOf(name: string): unknown[] {
  const schema = document.components?.schemas?.[name];
  return schema !== undefined && 'enum' in schema && Array.isArray(schema.enum) ? schema.enum : [];
}

/** The gateway's own source (the embedded stand-in upstreams answer for themselves, not for the gateway). */
async function gatewaySources(dir = 'src'): Promise<Array<{ file: string; text: string }>> {
  const found: Array<{ file: string; text: string }> = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (path !== join('src', 'local')) found.push(...(await gatewaySources(path)));
    } else if (entry.name.endsWith('.ts')) {
      found.push({ file: path, text: await readFile(path, 'utf8') });
    }
  }
  return found;
}

function failure(code: string, reason?: string) {
  const body = {
    data: null,
    meta: { requestId: 'req-1' },
    errors: [{ code, message: 'm', ...(reason ? { reason } : {}) }],
  };
  return {
    headers: new Headers({
      'content-type': 'application/json',
      'x-request-id': 'req-1',
      'www-authenticate': 'Bearer',
      allow: 'GET, HEAD',
      'retry-after': '5',
      'ratelimit-policy': '"per-organization";q=10;w=60',
      ratelimit: '"per-organization";r=0;t=5',
    }),
    body: JSON.stringify(body),
  };
}

describe('OpenAPI document: drift between the server and the document', () => {
  it('the code and reason enums hold exactly the closed unions of the server', () => {
    assert.deepEqual(enumOf('ErrorCode'), [...ERROR_CODES]);
    assert.deepEqual(enumOf('ErrorReason'), [...ERROR_REASONS]);
  });

  it('every code the source can raise, and every reason it can send, is in the document', async () => {
    const codes = new Set<string>();
    const reasons = new Set<string>();
    for (const { text } of await gatewaySources()) {
      for (const match of text.matchAll(/new ApiError\(\s*'([A-Z_]+)'/g)) codes.add(match[1] ?? '');
      for (const match of text.matchAll(/\breason: '([a-z_]+)'/g)) reasons.add(match[1] ?? '');
      // Unions of reasons (e.g. the authentication refusals) list their members as string literals.
      for (const union of text.matchAll(/type \w*Reason =((?:\s*\|\s*'[a-z_]+')+)/g)) {
        for (const member of (union[1] ?? '').matchAll(/'([a-z_]+)'/g)) reasons.add(member[1] ?? '');
      }
    }
    assert.ok(codes.size >= 5 && reasons.size >= 10, 'the scan finds the source');
    assert.deepEqual(
      [...codes].filter((code) => !enumOf('ErrorCode').includes(code)),
      [],
    );
    assert.deepEqual(
      [...reasons].filter((reason) => !enumOf('ErrorReason').includes(reason)),
      [],
    );
  });

  it('every operation documents the status of every code, with each reason of that code', () => {
    // Every failure carries a reason: each code has at least one, and a failure without is refused.
    for (const code of ERROR_CODES) assert.ok(reasonsOf(code).length > 0, `${code} has no reason`);
    for (const route of PUBLIC_ROUTES) {
      const bare = { status: 400, ...failure('BAD_REQUEST') };
      assert.deepEqual(conformance.problems(route.path, bare), [
        "body: data/errors/0 must have required property 'reason'",
      ]);
      for (const reason of ERROR_REASONS) {
        const code = CODE_BY_REASON[reason];
        const answer = { status: STATUS_BY_CODE[code], ...failure(code, reason) };
        assert.deepEqual(conformance.problems(route.path, answer), [], `${route.path} ${code} ${reason}`);
      }
    }
  });

  it('is not vacuous: an unknown reason, or a reason under another code, is refused', () => {
    const unknown = { status: 400, ...failure('BAD_REQUEST', 'made_up_reason') };
    assert.notDeepEqual(conformance.problems('/v1/api/rankings', unknown), []);
    const misplaced = { status: 400, ...failure('BAD_REQUEST', 'missing_key') };
    assert.notDeepEqual(conformance.problems('/v1/api/rankings', misplaced), []);
  });
});
