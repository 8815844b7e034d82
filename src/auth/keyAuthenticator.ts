import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { UpstreamError } from '../errors.js';
import type { KeyServiceClient } from '../upstream/keyServiceClient.js';
import type { KeyEventStream, KeyServiceEvent, Verification } from '../upstream/keyServiceContract.js';
import { describe } from '../upstream/upstreamFailure.js';
import type { ClaimOutcome, UsageLedger } from '../usage/usageLedger.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { isJwtShaped, toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';
import { principalFor } from './principalFor.js';
import { type CachedVerification, createVerificationCache } from './verificationCache.js';

/** A verification and which of this instance's calls its `used` includes. */
type Answer = Pick<CachedVerification, 'verification' | 'marks'>;

/**
 * API keys checked against the key service, the one source of truth.
 *
 * Form and checksum are checked here, so junk never reaches the service. Verifications
 * are cached only while the event stream is demonstrably alive (bytes within its ping
 * interval plus a margin: then a revocation reaches us as an event and drops the entry);
 * otherwise every request is verified. The service failing means 503 (an UpstreamError),
 * never a 401 and never a pass.
 *
 * The ceiling: the ledger checks a verification's `used` plus every call admitted that the
 * snapshot does not surely include (in flight ones too) and counts the call in one step,
 * so concurrent requests can never share a place under the ceiling: in memory on one
 * instance, in one Redis count shared by every instance when Redis is configured.
 * When only calls of unknown inclusion (a usage batch crossing the verify) decide a
 * refusal, the service is asked once more after they settle; when the shared count has no
 * verification of the period yet, it is asked at once. Usage the gateway's own count does
 * not hold reaches us only through `used`: an organization with a ceiling is re-verified
 * once its entry is older than `usageFreshnessMs`, and on every request within
 * `nearCeilingMargin` calls of it.
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
  /** Headroom (calls) below which an organization with a ceiling is verified on every request. Default 100. */
  nearCeilingMargin: number;
  /** How long a refusal that calls of unknown inclusion decide waits for them before asking again. Default 1 s. */
  settleMs: number;
}

export interface KeyAuthenticatorOptions {
  /** `refresh`: a background re-verification of a cached key, scheduled behind the callers waiting for one. */
  keyService: Pick<KeyServiceClient, 'followEvents'> & {
    verify(keyHash: string, lane?: 'refresh'): Promise<Verification | null>;
  };
  /** The calls counted against the ceiling (this instance's, or every instance's in Redis), shared with the usage buffer. */
  ledger: UsageLedger;
  now: () => Date;
  logger: Logger;
  cache?: Partial<KeyAuthenticatorCacheOptions>;
}

export interface KeyAuthenticator extends Authenticator {
  /** Starts following the key service's event stream (until then, nothing is cached). */
  start(): void;
  /** Stops following and forgets every cached answer. */
  close(): Promise<void>;
}

const DEFAULT_CACHE: KeyAuthenticatorCacheOptions = {
  max: 10_000,
  ttlMs: 60_000,
  staleMs: 60_000,
  unknownMax: 10_000,
  unknownTtlMs: 10_000,
  usageFreshnessMs: 5_000,
  nearCeilingMargin: 100,
  settleMs: 1_000,
};

type Usability = 'fresh' | 'stale' | 'unusable';

export function createKeyAuthenticator(options: KeyAuthenticatorOptions): KeyAuthenticator {
  const { keyService, ledger, now, logger } = options;
  const settings: KeyAuthenticatorCacheOptions = { ...DEFAULT_CACHE, ...options.cache };
  const cache = createVerificationCache({ ...settings, ttlMs: settings.ttlMs + settings.staleMs, now });
  /** Verifications on their way, shared by concurrent requests for the same hash. */
  const inFlight = new Map<string, Promise<Answer | null>>();
  /** Verifications asked again to settle a refusal, shared the same way. */
  const confirming = new Map<string, Promise<Answer | null>>();
  let stream: KeyEventStream | undefined;
  /** The organization of each key verified lately: a shared count marks a snapshot by organization before the verify. */
  const organizationOfKey = new LRUCache<string, string>({ max: settings.max });

  const following = () => stream?.isConnected() ?? false;

  function onEvent(event: KeyServiceEvent): void {
    switch (event.type) {
      case 'key.revoked':
        cache.dropKey(event.keyHash);
        inFlight.delete(event.keyHash);
        confirming.delete(event.keyHash);
        logger.info({ keyId: event.keyId, organizationId: event.organizationId }, 'key revoked: verification dropped');
        return;
      case 'organization.updated':
        cache.dropOrganization(event.organizationId);
        inFlight.clear();
        confirming.clear();
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
    confirming.clear();
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
    if (ledger.headroom(organization.id, { used, ceiling, periodEnd }, entry.marks) <= settings.nearCeilingMargin)
      return 'unusable';
    return age <= settings.usageFreshnessMs ? 'fresh' : 'stale';
  }

  async function verifyAndRemember(keyHash: string, lane?: 'refresh'): Promise<Answer | null> {
    const generation = cache.generation();
    const cacheable = following();
    const opening = ledger.openSnapshot(organizationOfKey.get(keyHash));
    // A shared count reads what is surely included before the verify is sent: the verify waits for it.
    const window = opening instanceof Promise ? await opening : opening;
    let verification: Verification | null;
    try {
      verification = await keyService.verify(keyHash, lane);
    } catch (err: unknown) {
      window.discard();
      throw err;
    }
    // Unknown hashes are remembered even without the stream: no event would ever announce a
    // key's creation, and a new key's text cannot have been presented before it existed.
    if (verification === null) {
      window.discard();
      cache.rememberUnknown(keyHash, generation);
      return null;
    }
    const { organization } = verification;
    organizationOfKey.set(keyHash, organization.id);
    const answer: Answer = { verification, marks: await window.close(organization.id, organization.usage) };
    if (cacheable && following()) cache.remember(keyHash, answer, generation);
    return answer;
  }

  function shared(
    asking: Map<string, Promise<Answer | null>>,
    keyHash: string,
    lane?: 'refresh',
  ): Promise<Answer | null> {
    const pending = asking.get(keyHash);
    if (pending) return pending;
    const asked = verifyAndRemember(keyHash, lane).finally(() => {
      if (asking.get(keyHash) === asked) asking.delete(keyHash);
    });
    asking.set(keyHash, asked);
    return asked;
  }

  function answerFor(keyHash: string): Promise<Answer | null> {
    const cached = cache.get(keyHash);
    const use = cached ? usability(cached) : 'unusable';
    if (cached && use === 'fresh') return Promise.resolve(cached);
    if (cached && use === 'stale') {
      // The cached answer is served meanwhile: a line with the cause, no stack (an outage would repeat it).
      shared(inFlight, keyHash, 'refresh').catch((err: unknown) =>
        logger.warn({ detail: describe(err) }, 'background verification failed'),
      );
      return Promise.resolve(cached);
    }
    if (cache.isUnknown(keyHash)) return Promise.resolve(null);
    return shared(inFlight, keyHash);
  }

  /** Checks the ceiling against this answer and counts the call (synchronously when the ledger can). */
  function claimFor({ verification, marks }: Answer): ClaimOutcome | Promise<ClaimOutcome> {
    const { organization } = verification;
    return ledger.claim({
      organizationId: organization.id,
      usage: organization.usage,
      marks,
      nearCeilingMargin: settings.nearCeilingMargin,
    });
  }

  /**
   * Asks again: at once when the shared count lacks this period's verification, else once the
   * calls in doubt are acknowledged (or the wait ends), so the answer includes them.
   */
  async function confirm(
    keyHash: string,
    organizationId: string,
    refusal: 'inDoubt' | 'unseeded',
  ): Promise<Answer | null> {
    if (refusal === 'inDoubt') await ledger.settled(organizationId, settings.settleMs);
    return shared(confirming, keyHash);
  }

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const text = presentedKeyText(credentials);
      if (isJwtShaped(text)) throw authFailure('not_an_api_key');
      const key = toWellFormedKey(text);
      if (key === null) throw authFailure('malformed_key');
      credentials.onKeyPrefix?.(key.prefix);
      const answer = await answerFor(key.keyHash);
      // A refusal is logged once, on the request's own line (prefix and reason).
      if (answer === null) return principalFor(null, key, now());
      // Who the caller is and what it may do come first; the ceiling is the last check.
      let principal = principalFor(answer.verification, key, now());
      const claiming = claimFor(answer);
      let outcome = claiming instanceof Promise ? await claiming : claiming;
      if ('refusal' in outcome && outcome.refusal !== 'refused') {
        const again = await confirm(key.keyHash, answer.verification.organization.id, outcome.refusal);
        if (again === null) return principalFor(null, key, now());
        principal = principalFor(again.verification, key, now());
        outcome = await claimFor(again);
      }
      if ('refusal' in outcome && outcome.refusal === 'unseeded') {
        // The period's count was started over again meanwhile (another instance saw a new period): retry soon.
        throw new UpstreamError('key-service', 'throttled', 'usage count of this period not seeded yet', 1);
      }
      if ('refusal' in outcome) throw authFailure('usage_ceiling_reached');
      return { ...principal, admission: outcome.admission };
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
