import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { createKeyAuthenticator } from '../../src/auth/keyAuthenticator.js';
import { createAnswerCache } from '../../src/cache/createAnswerCache.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { startLocalUpstreams } from '../../src/local/startLocalUpstreams.js';
import type { RecordedExamples } from '../../src/openapi/recordedExamples.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { PUBLIC_ROUTES } from '../../src/routes/publicRoutes.js';
import { createKeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import { createUsageBuffer } from '../../src/usage/createUsageBuffer.js';
import { listen } from '../support/http.js';
import { tempDir } from '../support/tempDir.js';

/**
 * Real answers of the gateway over the demo data, recorded as the OpenAPI document's
 * examples: the embedded platform and key service seeded at one fixed instant, the
 * gateway built as main.ts builds it, every call over real HTTP. The same instant gives
 * the same answers, so a test can re-record and compare.
 */

/** The instant the demo data is seeded for (and the gateway's clock). */
const SEEDED_AT = new Date('2026-11-02T12:00:00.000Z');

interface Call {
  readonly name: string;
  readonly query: string;
  readonly key?: string | null;
  readonly method?: string;
}

/** What each route is asked for its success forms. */
function successCalls(path: string): Call[] {
  const setupRequired = path.includes('ai-visibility') || path.includes('audit');
  return [
    { name: 'acme.com', query: 'site=acme.com' },
    ...(setupRequired ? [{ name: 'setup_required', query: 'site=newsite.io' }] : []),
  ];
}

/** The failures the demo data can produce; every route answers them alike, so one route is asked. */
function failureCalls(): Call[] {
  return [
    { name: 'site_missing', query: '' },
    { name: 'site_ambiguous', query: 'site=acme' },
    { name: 'site_not_found', query: 'site=unknown.example' },
    { name: 'missing_key', query: 'site=acme.com', key: null },
    { name: 'expired_key', query: 'site=acme.com', key: LOCAL_KEYS.demoExpired },
    { name: 'missing_permission', query: 'site=acme.com', key: LOCAL_KEYS.demoWriteOnly },
    { name: 'plan_not_eligible', query: 'site=acme.com', key: LOCAL_KEYS.starter },
    { name: 'usage_ceiling_reached', query: 'site=acme.com', key: LOCAL_KEYS.capped },
    { name: 'method_not_allowed', query: 'site=acme.com', method: 'DELETE' },
  ];
}

export async function recordExamples(): Promise<RecordedExamples> {
  const now = () => SEEDED_AT;
  const logger = pino({ level: 'silent' });
  const dir = await tempDir('openapi-examples-');
  const local = await startLocalUpstreams({ dataDir: dir.path, now });
  const timeoutMs = 5000;
  const platform = createPlatformClient({ ...local.platform, timeoutMs });
  const keyService = createKeyServiceClient({ ...local.keyService, timeoutMs });
  const limiter = createLocalAdmission({ requests: 1000, windowSeconds: 60 });
  const { ledger } = limiter;
  const usage = createUsageBuffer({ sink: keyService, logger, now, ledger });
  const authenticator = createKeyAuthenticator({
    keyService,
    ledger,
    now,
    logger,
  });
  const cache = createAnswerCache({ ttlSeconds: 30, now });
  const server = await listen(createApp({ logger, now, authenticator, admission: limiter, cache, usage, platform }));
  let requests = 0;
  /** Each call's answer, grouped by status. */
  const record = async (path: string, calls: Call[]) => {
    const byStatus: Record<string, Record<string, unknown>> = {};
    for (const call of calls) {
      const key = call.key === undefined ? LOCAL_KEYS.demo : call.key;
      const res = await fetch(`${server.url}${path}?${call.query}`, {
        method: call.method ?? 'GET',
        headers: {
          'x-request-id': `example-${++requests}`,
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
        },
      });
      byStatus[String(res.status)] = { ...byStatus[String(res.status)], [call.name]: (await res.json()) as unknown };
    }
    return byStatus;
  };
  try {
    const success: Record<string, Record<string, unknown>> = {};
    for (const route of PUBLIC_ROUTES) {
      const { '200': answers, ...others } = await record(route.path, successCalls(route.path));
      if (answers === undefined || Object.keys(others).length > 0)
        throw new Error(`${route.path}: a success call failed`);
      success[route.operationId] = answers;
    }
    const first = PUBLIC_ROUTES[0];
    if (first === undefined) throw new Error('no public route');
    return { success, failures: await record(first.path, failureCalls()) };
  } finally {
    await server.close();
    await authenticator.close();
    await usage.close(1000);
    await limiter.close();
    await local.close();
    await dir.remove();
  }
}
