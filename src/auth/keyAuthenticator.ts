import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { NEAR_CEILING_MARGIN } from '../limits/admission.js';
import type { KeyServiceClient } from '../upstream/keyServiceClient.js';
import type { KeyEventStream, KeyServiceEvent, Verification } from '../upstream/keyServiceContract.js';
import { describe } from '../upstream/upstreamFailure.js';
import type { UsageLedger } from '../usage/usageLedger.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { isJwtShaped, toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';
import { principalFor } from './principalFor.js';
import { type CachedVerification, createVerificationCache } from './verificationCache.js';

/** A verification and the gateway's acknowledged calls its `used` surely includes. */
type Verified = Pick<CachedVerification, 'verification' | 'acknowledgedBefore'>;

/**
 * API keys checked against the key service, the one source of truth.
 *
 * Form and checksum are checked here, so junk never reaches the service. Verifications
 * are cached only while the event stream is demonstrably alive (bytes within its ping
 * interval plus a margin: then a revocation reaches us as an event and drops the entry);
 * otherwise every request is verified. The service failing means 503 (an UpstreamError),
 * never a 401 and never a pass.
 *
 * The ceiling is admission's check (src/usage/README.md); authentication says who is
 * calling and hands over its verification's usage, with the acknowledged calls counted
 * before the verify was sent (all in `used`). Usage the gateway's own count does not hold
 * reaches us only through `used`: an organization with a ceiling is verified again once
 * its entry is older than `usageFreshnessMs`, and on every request while near it.
 *
 * An entry past its freshness but within `staleMs` is still served while the stream is
 * alive and the organization is not near its ceiling, and refreshed in the background.
 */

export interface KeyAuthenticatorCacheOptions {
  /** Verifications kept at most. Default 10 000. */
  max: number;
  /** How long a verification is fresh. Default 60 s. */
  ttlMs: number;
  /** How long past its freshness a verification may still be served while it is refreshed. Default 60 s. */
  staleMs: number;
  /** Unknown hashes remembered at most. Default 10 000. */
  unknownMax: number;
  /** How long an unknown hash is remembered. Default 10 s. */
  unknownTtlMs: number;
  /** Age beyond which an organization with a ceiling is verified again. Default 5 s. */
  usageFreshnessMs: number;
}

export interface KeyAuthenticatorOptions {
  /** `refresh`: a background re-verification of a cached key, scheduled behind the callers waiting for one. */
  keyService: Pick<KeyServiceClient, 'followEvents'> & {
    verify(keyHash: string, lane?: 'refresh'): Promise<Verification | null>;
  };
  /** The calls counted against the ceiling: read before each verify. */
  ledger: Pick<UsageLedger, 'beforeVerify' | 'isNearCeiling'>;
  now: () => Date;
  logger: Logger;
  cache?: Partial<KeyAuthenticatorCacheOptions>;
}

export interface KeyAuthenticator extends Authenticator {
  /** Starts following the key service's event stream (until then, nothing is cached). */
  start(): void;
  /** Stops following and forgets every cached verification. */
  close(): Promise<void>;
}

const DEFAULT_CACHE: KeyAuthenticatorCacheOptions = {
  max: 10_000,
  ttlMs: 60_000,
  staleMs: 60_000,
  unknownMax: 10_000,
  unknownTtlMs: 10_000,
  usageFreshnessMs: 5_000,
};

type Usability = 'fresh' | 'stale' | 'unusable';

export function createKeyAuthenticator(options: KeyAuthenticatorOptions): KeyAuthenticator {
  const { keyService, ledger, now, logger } = options;
  const settings: KeyAuthenticatorCacheOptions = { ...DEFAULT_CACHE, ...options.cache };
  const cache = createVerificationCache({ ...settings, ttlMs: settings.ttlMs + settings.staleMs, now });
  /** Verifications on their way, shared by concurrent requests for the same hash. */
  const inFlight = new Map<string, Promise<Verified | null>>();
  let stream: KeyEventStream | undefined;
  /** The organization of each key verified lately: a shared count is read by organization before the verify. */
  const organizationOfKey = new LRUCache<string, string>({ max: settings.max });

  const following = () => stream?.isConnected() ?? false;

  function onEvent(event: KeyServiceEvent): void {
    switch (event.type) {
      case 'key.revoked':
        cache.dropKey(event.keyHash);
        inFlight.delete(event.keyHash);
        logger.info({ keyId: event.keyId, organizationId: event.organizationId }, 'key revoked: verification dropped');
        return;
      case 'organization.updated':
        cache.dropOrganization(event.organizationId);
        inFlight.clear();
        logger.info({ organizationId: event.organizationId }, 'organization updated: verifications dropped');
        return;
      case 'reset':
        forgetEverything();
        logger.info('key events reset: every verification dropped');
        return;
    }
  }

  function onConnectionChange(connected: boolean, detail: string): void {
    if (connected) {
      logger.info('following key events: verifications may be cached');
      return;
    }
    // Events may be missed from now on: nothing cached can be trusted, and nothing new is cached.
    forgetEverything();
    if (stream) logger.warn({ detail }, 'key event stream down: verifying every request'); // not when closing
  }

  function forgetEverything(): void {
    cache.clear();
    inFlight.clear();
  }

  function usability(entry: CachedVerification): Usability {
    if (!following()) return 'unusable';
    const { organization } = entry.verification;
    const { used, ceiling, periodEnd } = organization.usage;
    const nowMs = now().getTime();
    const age = nowMs - entry.fetchedAt;
    if (ceiling === null) return age <= settings.ttlMs ? 'fresh' : 'stale';
    // A new period starts a new count: only the service knows it.
    if (nowMs >= periodEnd.getTime()) return 'unusable';
    if (ceiling - used <= NEAR_CEILING_MARGIN || ledger.isNearCeiling(organization.id)) return 'unusable';
    return age <= settings.usageFreshnessMs ? 'fresh' : 'stale';
  }

  async function verifyAndRemember(
    keyHash: string,
    lane?: 'refresh',
    organizationId?: string,
  ): Promise<Verified | null> {
    const generation = cache.generation();
    const cacheable = following();
    const sent = await ledger.beforeVerify(organizationId ?? organizationOfKey.get(keyHash));
    let verification: Verification | null;
    try {
      verification = await keyService.verify(keyHash, lane);
    } finally {
      sent.end();
    }
    // Unknown hashes are remembered even without the stream: no event would ever announce a
    // key's creation, and a new key's text cannot have been presented before it existed.
    if (verification === null) {
      cache.rememberUnknown(keyHash, generation);
      return null;
    }
    const { organization } = verification;
    organizationOfKey.set(keyHash, organization.id);
    const acknowledgedBefore = sent.acknowledgedFor(organization.id);
    if (acknowledgedBefore === null && organization.usage.ceiling !== null && organizationId === undefined) {
      // The shared count could not be read without knowing whose key it was: asked again, knowing it.
      return verifyAndRemember(keyHash, lane, organization.id);
    }
    const verified: Verified = { verification, acknowledgedBefore: acknowledgedBefore ?? 0 };
    if (cacheable && following()) cache.remember(keyHash, verified, generation);
    return verified;
  }

  function shared(
    asking: Map<string, Promise<Verified | null>>,
    keyHash: string,
    lane?: 'refresh',
  ): Promise<Verified | null> {
    const pending = asking.get(keyHash);
    if (pending) return pending;
    const asked = verifyAndRemember(keyHash, lane).finally(() => {
      if (asking.get(keyHash) === asked) asking.delete(keyHash);
    });
    asking.set(keyHash, asked);
    return asked;
  }

  function verifiedFor(keyHash: string): Promise<Verified | null> {
    const cached = cache.get(keyHash);
    const use = cached ? usability(cached) : 'unusable';
    if (cached && use === 'fresh') return Promise.resolve(cached);
    if (cached && use === 'stale') {
      // The cached verification is served meanwhile: a line with the cause, no stack (an outage would repeat it).
      shared(inFlight, keyHash, 'refresh').catch((err: unknown) =>
        logger.warn({ detail: describe(err) }, 'background verification failed'),
      );
      return Promise.resolve(cached);
    }
    if (cache.isUnknown(keyHash)) return Promise.resolve(null);
    return shared(inFlight, keyHash);
  }

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const text = presentedKeyText(credentials);
      if (isJwtShaped(text)) throw authFailure('not_an_api_key');
      const key = toWellFormedKey(text);
      if (key === null) throw authFailure('malformed_key');
      credentials.onKeyPrefix?.(key.prefix);
      const verified = await verifiedFor(key.keyHash);
      // A refusal is logged once, on the request's own line (prefix and reason).
      if (verified === null) return principalFor(null, key, now());
      const { organizationId, keyId, keyPrefix } = principalFor(verified.verification, key, now());
      const { used, ceiling, periodEnd } = verified.verification.organization.usage;
      // Fields spelled out: Node 20's V8 builds an object spread followed by more fields slowly, on every request.
      return {
        organizationId,
        keyId,
        keyPrefix,
        usage: { used, ceiling, periodEnd, acknowledgedBefore: verified.acknowledgedBefore },
      };
    },

    start() {
      if (stream) return;
      stream = keyService.followEvents({ onEvent, onConnectionChange });
    },

    async close() {
      const closing = stream;
      stream = undefined;
      forgetEverything();
      organizationOfKey.clear();
      await closing?.close();
    },
  };
}
