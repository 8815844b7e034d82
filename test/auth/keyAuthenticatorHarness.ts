import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { authFailure } from '../../src/auth/authFailures.js';
import {
  createKeyAuthenticator,
  type KeyAuthenticator,
  type KeyAuthenticatorCacheOptions,
} from '../../src/auth/keyAuthenticator.js';
import type { PresentedCredentials } from '../../src/auth/principal.js';
import { ApiError, type UpstreamError } from '../../src/errors.js';
import type { Admission } from '../../src/limits/admission.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import type { KeyServiceClient } from '../../src/upstream/keyServiceClient.js';
import type { KeyEventHandlers, KeyServiceEvent, Verification } from '../../src/upstream/keyServiceContract.js';
import type { UsageLedger } from '../../src/usage/usageLedger.js';
import { FIXED_NOW } from '../support/fakeServices.js';
import {
  keyHashOf,
  testKey,
  type VerifyAnswerJson,
  type VerifyAnswerOverrides,
  verifyAnswer,
} from '../support/keys.js';

export const KEY = testKey('authenticator');
export const KEY_B = testKey('authenticator org b');
export const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfMTkifQ.c2lnbmF0dXJl';

/** The client's parsed form of a verify answer. */
function asVerification(json: VerifyAnswerJson): Verification {
  return {
    key: {
      id: json.key.id,
      organizationId: json.key.organizationId,
      prefix: json.key.prefix,
      permissions: json.key.permissions,
      expiresAt: new Date(json.key.expiresAt),
      revokedAt: json.key.revokedAt === null ? null : new Date(json.key.revokedAt),
    },
    organization: {
      id: json.organization.id,
      plan: json.organization.plan,
      usage: {
        periodStart: new Date(json.organization.usage.periodStart),
        periodEnd: new Date(json.organization.usage.periodEnd),
        used: json.organization.usage.used,
        ceiling: json.organization.usage.ceiling,
      },
    },
  };
}

/** A key service under the test's control: answers, failures, a gate to hold answers, the stream. */
export function controlledKeyService() {
  const answers = new Map<string, Verification>();
  let handlers: KeyEventHandlers | undefined;
  let connected = false;
  let gate: Promise<void> | undefined;
  const service = {
    calls: 0,
    failure: undefined as UpstreamError | undefined,
    streamClosed: false,
    answer(key: string, overrides: VerifyAnswerOverrides = {}) {
      answers.set(keyHashOf(key), asVerification(verifyAnswer(key, overrides)));
    },
    /** Holds every verify answer until the returned release is called. */
    hold(): () => void {
      let release = () => {};
      gate = new Promise<void>((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
    connect() {
      connected = true;
      handlers?.onConnectionChange?.(true, 'test');
    },
    drop() {
      connected = false;
      handlers?.onConnectionChange?.(false, 'test');
    },
    emit(event: KeyServiceEvent) {
      handlers?.onEvent(event);
    },
    client: {
      async verify(keyHash: string) {
        service.calls += 1;
        const held = gate;
        const answer = answers.get(keyHash) ?? null;
        if (held) await held;
        if (service.failure) throw service.failure;
        return answer;
      },
      followEvents(h: KeyEventHandlers) {
        handlers = h;
        return {
          isConnected: () => connected,
          async close() {
            connected = false;
            service.streamClosed = true;
          },
        };
      },
    } satisfies Pick<KeyServiceClient, 'verify' | 'followEvents'>,
  };
  return service;
}

export function bearer(key: string): PresentedCredentials {
  return { authorization: `Bearer ${key}`, apiKeyHeader: undefined };
}

export const refusedWith = (status: number, reason: string) => (err: unknown) => {
  assert.ok(err instanceof ApiError, String(err));
  assert.equal(err.status, status);
  assert.equal(err.reason, reason);
  if (status === 401) assert.equal(err.headers['WWW-Authenticate'], 'Bearer');
  return true;
};

/**
 * One authenticator per test, over the controlled key service, a settable clock and pending
 * usage. Its `authenticate` is followed by the admission step's ceiling check, as in the app.
 */
export interface AuthenticatorUnderTest {
  nowMs: number;
  admission: Admission & { readonly ledger: UsageLedger };
  /** Makes `calls` of the organization admitted here and not yet acknowledged. */
  setPending(organizationId: string, calls: number): void;
  service: ReturnType<typeof controlledKeyService>;
  logLines: string[];
  authenticator: KeyAuthenticator;
  build(cache?: Partial<KeyAuthenticatorCacheOptions>): KeyAuthenticator;
}

/** Registers the per-test setup in the calling describe; no log line may hold a whole key. */
export function useKeyAuthenticator(): AuthenticatorUnderTest {
  const t = {} as AuthenticatorUnderTest;
  const pending = new Map<string, number>();
  t.setPending = (organizationId, calls) => {
    const change = calls - (pending.get(organizationId) ?? 0);
    if (change > 0) t.admission.ledger.adopted(organizationId, change);
    if (change < 0) t.admission.ledger.dropped(organizationId, -change);
    pending.set(organizationId, calls);
  };
  t.build = (cache = {}) => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        t.logLines.push(chunk.toString('utf8'));
        callback();
      },
    });
    const authenticator = createKeyAuthenticator({
      keyService: t.service.client,
      ledger: t.admission.ledger,
      now: () => new Date(t.nowMs),
      logger: pino({ level: 'debug' }, sink),
      cache,
    });
    return {
      ...authenticator,
      async authenticate(credentials) {
        const principal = await authenticator.authenticate(credentials);
        const grant = await t.admission.take(principal.organizationId, t.nowMs, principal.usage);
        if (grant.ceilingReached) throw authFailure('usage_ceiling_reached');
        return principal;
      },
    };
  };

  beforeEach(() => {
    t.nowMs = FIXED_NOW.getTime();
    t.admission = createLocalAdmission({ requests: 1_000_000, windowSeconds: 60 });
    pending.clear();
    t.service = controlledKeyService();
    t.logLines = [];
    t.authenticator = t.build();
  });
  afterEach(async () => {
    await t.authenticator.close();
    for (const line of t.logLines) assert.doesNotMatch(line, /atl_[0-9A-Za-z]{38}/, 'a log line holds a whole key');
  });
  return t;
}
