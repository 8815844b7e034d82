import type { Logger } from 'pino';
import type { KeyEventStream, KeyServiceClient, KeyServiceEvent, Verification } from '../upstream/keyServiceClient.js';
import { principalFor } from './accessDecision.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { isJwtShaped, toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';
import { createVerificationCache, type CachedVerification } from './verificationCache.js';

/**
 * API keys checked against the key service, the one source of truth.
 *
 * Form and checksum are checked here, so junk never reaches the service. Verifications
 * are cached only while the event stream is open (then a revocation reaches us as an
 * event and drops the entry); while it is down every request is verified. The service
 * failing means 503 (an UpstreamError), never a 401 and never a pass.
 *
 * The cached `used` count falls behind as usage grows, so an organization with a ceiling
 * is served from cache only while its entry is younger than `usageFreshnessMs` AND its
 * headroom (ceiling - used - pending) is above `nearCeilingMargin`; near the ceiling
 * every request asks the service. An organization without a ceiling keeps its entry for
 * `ttlMs`, until an event says otherwise.
 */

export interface KeyAuthenticatorCacheOptions {
  /** Verifications kept at most. Default 10 000. */
  max: number;
  /** How long a verification may be reused. Default 60 s. */
  ttlMs: number;
  /** Unknown hashes remembered at most. Default 10 000. */
  unknownMax: number;
  /** How long an unknown hash is remembered. Default 10 s. */
  unknownTtlMs: number;
  /** Age beyond which an organization with a ceiling is verified again. Default 5 s. */
  usageFreshnessMs: number;
  /** Headroom (calls) below which an organization with a ceiling is verified on every request. Default 100. */
  nearCeilingMargin: number;
}

export interface KeyAuthenticatorOptions {
  keyService: Pick<KeyServiceClient, 'verify' | 'followEvents'>;
  /** This gateway's successful calls of the organization not yet acknowledged by the key service. */
  pendingUsage: (organizationId: string) => number;
  now: () => Date;
  logger: Logger;
  cache?: Partial<KeyAuthenticatorCacheOptions>;
}

export interface KeyAuthenticator extends Authenticator {
  /** Starts following the key service's event stream (until then, nothing is cached). */
  start(): void;
  /** Stops following and forgets every cached answer. */
  close(): Promise<void>;
  /** Whether the event stream is open, i.e. whether verifications are being cached (health, metrics). */
  isFollowingEvents(): boolean;
}

const DEFAULT_CACHE: KeyAuthenticatorCacheOptions = {
  max: 10_000,
  ttlMs: 60_000,
  unknownMax: 10_000,
  unknownTtlMs: 10_000,
  usageFreshnessMs: 5_000,
  nearCeilingMargin: 100,
};

export function createKeyAuthenticator(options: KeyAuthenticatorOptions): KeyAuthenticator {
  const { keyService, pendingUsage, now, logger } = options;
  const settings: KeyAuthenticatorCacheOptions = { ...DEFAULT_CACHE, ...options.cache };
  const cache = createVerificationCache({ ...settings, now });
  /** Verifications on their way, shared by concurrent requests for the same hash. */
  const inFlight = new Map<string, Promise<Verification | null>>();
  let stream: KeyEventStream | undefined;

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

  function isUsable(entry: CachedVerification): boolean {
    if (!following()) return false;
    const { organization } = entry.verification;
    const { used, ceiling } = organization.usage;
    if (ceiling === null) return true;
    if (now().getTime() - entry.fetchedAt > settings.usageFreshnessMs) return false;
    return ceiling - used - pendingUsage(organization.id) > settings.nearCeilingMargin;
  }

  async function verifyAndRemember(keyHash: string): Promise<Verification | null> {
    const generation = cache.generation();
    const cacheable = following();
    const verification = await keyService.verify(keyHash);
    // Unknown hashes are remembered even without the stream: no event would ever announce a
    // key's creation, and a new key's text cannot have been presented before it existed.
    if (verification === null) cache.rememberUnknown(keyHash, generation);
    else if (cacheable && following()) cache.remember(keyHash, verification, generation);
    return verification;
  }

  function verificationOf(keyHash: string): Promise<Verification | null> {
    const cached = cache.get(keyHash);
    if (cached && isUsable(cached)) return Promise.resolve(cached.verification);
    if (cache.isUnknown(keyHash)) return Promise.resolve(null);
    const shared = inFlight.get(keyHash);
    if (shared) return shared;
    const asked = verifyAndRemember(keyHash).finally(() => {
      if (inFlight.get(keyHash) === asked) inFlight.delete(keyHash);
    });
    inFlight.set(keyHash, asked);
    return asked;
  }

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const text = presentedKeyText(credentials);
      if (isJwtShaped(text)) throw authFailure('not_an_api_key');
      const key = toWellFormedKey(text);
      if (key === null) throw authFailure('malformed_key');
      credentials.onKeyPrefix?.(key.prefix);
      const verification = await verificationOf(key.keyHash);
      // A refusal is logged once, on the request's own line (prefix and reason).
      return principalFor(verification, key, now(), pendingUsage);
    },

    start() {
      if (stream) return;
      stream = keyService.followEvents({ onEvent, onConnectionChange });
    },

    async close() {
      const closing = stream;
      stream = undefined;
      forgetEverything();
      await closing?.close();
    },

    isFollowingEvents: following,
  };
}
