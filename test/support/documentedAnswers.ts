import Mocha, { type Context, type RootHookObject } from 'mocha';
import { buildOpenApiDocument } from '../../src/openapi/buildOpenApiDocument.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { DocumentConformance } from '../openapi/documentConformance.js';
import { isLoopbackHost } from './nockPolicy.js';

/**
 * The test client's one hook: every answer a test receives through fetch from a path the
 * OpenAPI document describes is checked against the document (status, required headers,
 * body), so an answer cannot drift from its description unnoticed. A mocha root hook
 * fails the test that received a drifting answer.
 */

const conformance = new DocumentConformance(buildOpenApiDocument(PUBLIC_ROUTES));
const problems: string[] = [];
const checking = new Set<Promise<void>>();

/** HEAD and OPTIONS answers have no body to check; the document describes GET and, by 405, the rest. */
const UNCHECKED_METHODS = new Set(['HEAD', 'OPTIONS']);

/** How long the hook waits for bodies still arriving when a test ends: a stream a test cut off never ends. */
const BODY_WAIT_MS = 2000;

const unchecked = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const res = await unchecked(input, init);
  const request = input instanceof Request ? input : undefined;
  const url = new URL(request?.url ?? String(input));
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
  if (isLoopbackHost(url.host) && conformance.describes(url.pathname) && !UNCHECKED_METHODS.has(method)) {
    const copy = res.clone();
    const check = copy.text().then(
      (body) => {
        const found = conformance.problems(url.pathname, { status: res.status, headers: res.headers, body });
        if (found.length > 0)
          problems.push(`${method} ${url.pathname}${url.search} → ${res.status}: ${found.join('; ')}`);
      },
      () => {}, // a body the test itself cut off: nothing whole to check
    );
    checking.add(check);
    void check.finally(() => checking.delete(check));
  }
  return res;
};

export const mochaHooks: RootHookObject = {
  async afterEach(this: Context) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(checking),
      new Promise((resolve) => {
        timer = setTimeout(resolve, BODY_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    const found = problems.splice(0);
    if (found.length === 0 || this.currentTest?.state === 'failed') return;
    const err = new Error(`answers that differ from the OpenAPI document:\n${found.slice(0, 10).join('\n')}`);
    // As in nockPolicy: fail this test and go on with the next.
    if (this.test instanceof Mocha.Hook) this.test.error(err);
    else throw err;
  },
};
