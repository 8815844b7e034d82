import { pino } from 'pino';
import { authFailure } from '../../src/auth/authFailures.js';
import type { Authenticator, Principal } from '../../src/auth/principal.js';
import { createAnswerCache } from '../../src/cache/createAnswerCache.js';
import type { Admission, Grant, LimitDecision } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import type { Services } from '../../src/services.js';
import type { UsageLedger } from '../../src/usage/usageLedger.js';
import type { UsageRecorder } from '../../src/usage/usageRecorder.js';

export const PLATFORM_URL = 'http://platform.test/graphql';
export const PLATFORM_TOKEN = 'platform-token';

/** Bearer tokens the fake authenticator accepts, and the organization each belongs to. */
export const TEST_PRINCIPALS: Readonly<Record<string, Principal>> = {
  'key-org-a': { organizationId: 'org_a', keyId: 'key_a', keyPrefix: 'atl_aaaaaaaa' },
  'key-org-b': { organizationId: 'org_b', keyId: 'key_b', keyPrefix: 'atl_bbbbbbbb' },
};

/** The authentication seam for route tests: a bearer token names a test principal. */
export function fakeAuthenticator(): Authenticator {
  return {
    async authenticate({ authorization }) {
      const token = authorization?.replace(/^Bearer\s+/i, '') ?? '';
      const principal = TEST_PRINCIPALS[token];
      if (!principal) throw authFailure('invalid_key');
      return principal;
    },
  };
}

export function unlimitedAdmission(): Admission {
  return {
    async take() {
      return asGrant({ allowed: true, limit: 1000, remaining: 999, resetSeconds: 60, windowSeconds: 60 });
    },
    available: () => true,
    async close() {},
  };
}

/** A limit decision as admission's grant: no ceiling, nothing to give back. */
export function asGrant(decision: LimitDecision): Grant {
  return { ...decision, ceilingReached: false, ceilingInDoubt: false, keep() {}, giveBack() {} };
}

/** The calls counted against the ceiling on one instance without Redis, for an authenticator under test. */
export function testLedger(): UsageLedger {
  return createLocalAdmission({ requests: 1000, windowSeconds: 60 }).ledger;
}

export interface RecordedUsage extends UsageRecorder {
  readonly events: Array<{ organizationId: string; keyId: string; route: string }>;
}

export function recordingUsage(): RecordedUsage {
  const events: RecordedUsage['events'] = [];
  return {
    events,
    ensureRoom() {},
    record(principal, route) {
      events.push({ organizationId: principal.organizationId, keyId: principal.keyId, route });
    },
    pendingTotal() {
      return events.length;
    },
    async close() {},
  };
}

/** 2026-11-21T12:00:00Z unless a test says otherwise. */
export const FIXED_NOW = new Date('2026-11-21T12:00:00.000Z');

export function fakeServices(overrides: Partial<Services> = {}): Services {
  return {
    logger: pino({ level: 'silent' }),
    now: () => FIXED_NOW,
    authenticator: fakeAuthenticator(),
    admission: unlimitedAdmission(),
    cache: createAnswerCache({ ttlSeconds: 0 }),
    usage: recordingUsage(),
    // A deadline a loaded machine meets: tests of a late platform bring a client with a short one.
    platform: createPlatformClient({ url: PLATFORM_URL, token: PLATFORM_TOKEN, timeoutMs: 5000 }),
    ...overrides,
  };
}
