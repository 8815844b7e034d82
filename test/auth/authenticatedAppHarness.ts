import assert from 'node:assert/strict';
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import nock from 'nock';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator, type KeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import type { Admission } from '../../src/limits/admission.js';
import { createKeyServiceClient, type KeyServiceCall } from '../../src/upstream/keyServiceClient.js';
import { FIXED_NOW, fakeServices, PLATFORM_URL, testLedger, unlimitedAdmission } from '../support/fakeServices.js';
import { listen } from '../support/http.js';
import { keyHashOf, testKey, type VerifyAnswerOverrides, verifyAnswer } from '../support/keys.js';
import { EMPTY_KEYWORDS } from '../support/platformAnswers.js';

/**
 * Authentication through the whole app: status, envelope, WWW-Authenticate and
 * Retry-After as a consumer sees them, with the real key-service client against nock.
 */

export const KEY_SERVICE = 'http://key-service.test';
export const KEY = testKey('http reader');
export const OTHER_KEY = testKey('http other');
export const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMTkifQ.c2lnbmF0dXJl';
export const PATH = '/v1/api/keywords?site=example.com';

export interface Answer {
  status: number;
  headers: Headers | Record<string, string | string[] | undefined>;
  text: string;
  json: {
    data: unknown;
    meta: { requestId?: string };
    errors: Array<{ code: string; message: string; reason?: string }>;
  };
}

/** Registers, in the calling describe, one app with the real key authenticator for its tests, and returns the tools to call it. */
export function useAuthenticatedApp() {
  let server: Awaited<ReturnType<typeof listen>>;
  let authenticator: KeyAuthenticator;
  const keyServiceCalls: Array<{ call: KeyServiceCall; outcome: string }> = [];
  const limiterCalls: string[] = [];

  /** The app with the real key authenticator; `timeoutMs` bounds each key-service call. */
  async function serve(timeoutMs: number) {
    const keyService = createKeyServiceClient({
      url: KEY_SERVICE,
      token: 'key-service-token',
      timeoutMs,
      onCall: (call, _seconds, outcome) => keyServiceCalls.push({ call, outcome }),
    });
    const keyAuthenticator = createKeyAuthenticator({
      keyService,
      ledger: testLedger(),
      now: () => FIXED_NOW,
      logger: pino({ level: 'silent' }),
    });
    const limiter: Admission = {
      async take(organizationId) {
        limiterCalls.push(organizationId);
        return unlimitedAdmission().take(organizationId, 0);
      },
      available: () => true,
      async close() {},
    };
    return {
      authenticator: keyAuthenticator,
      server: await listen(createApp(fakeServices({ authenticator: keyAuthenticator, admission: limiter }))),
    };
  }

  before(async () => {
    // Generous: only the timeout test (its own app) is meant to run out of time.
    ({ authenticator, server } = await serve(5000));
  });
  beforeEach(() => {
    keyServiceCalls.length = 0;
    limiterCalls.length = 0;
  });
  after(async () => {
    await authenticator.close();
    await server.close();
  });

  async function get(headers: Record<string, string>, path = PATH, base = server.url): Promise<Answer> {
    const res = await fetch(`${base}${path}`, { headers });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: JSON.parse(text) as Answer['json'] };
  }

  /** Sends header lines exactly as given (an array is sent as repeated lines, which fetch cannot do). */
  function getRaw(headers: OutgoingHttpHeaders): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${server.url}${PATH}`, { headers }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: JSON.parse(text) as Answer['json'],
          }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  }

  function keyServiceAnswers(key: string, overrides: VerifyAnswerOverrides = {}) {
    return nock(KEY_SERVICE)
      .post('/v1/keys/verify', { keyHash: keyHashOf(key) })
      .reply(200, verifyAnswer(key, overrides));
  }

  /** The platform answering the keywords route, only for the given organization. */
  function platformAnswersFor(organizationId: string) {
    return nock(new URL(PLATFORM_URL).origin)
      .post(
        '/graphql',
        (body: { variables: Record<string, unknown> }) => body.variables.organizationId === organizationId,
      )
      .reply(200, EMPTY_KEYWORDS);
  }

  function header(answer: Answer, name: string): string | undefined {
    const value = answer.headers instanceof Headers ? answer.headers.get(name) : answer.headers[name.toLowerCase()];
    return Array.isArray(value) ? value.join(', ') : (value ?? undefined);
  }

  function assertRefused(answer: Answer, status: 401 | 403, reason: string): void {
    assert.equal(answer.status, status, answer.text);
    assert.equal(answer.json.data, null);
    assert.equal(typeof answer.json.meta.requestId, 'string');
    assert.equal(answer.json.errors.length, 1);
    assert.equal(answer.json.errors[0]?.code, status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN');
    assert.equal(answer.json.errors[0]?.reason, reason);
    assert.equal(header(answer, 'www-authenticate'), status === 401 ? 'Bearer' : undefined);
    assert.doesNotMatch(answer.text, /atl_/, 'the body echoes key text');
    assert.deepEqual(limiterCalls, [], 'the limiter ran before authentication decided');
  }

  return {
    keyServiceCalls,
    limiterCalls,
    serve,
    get,
    getRaw,
    keyServiceAnswers,
    platformAnswersFor,
    header,
    assertRefused,
  };
}
