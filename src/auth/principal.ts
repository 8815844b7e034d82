import type { CallerUsage } from '../limits/admission.js';

export interface Principal {
  readonly organizationId: string;
  readonly keyId: string;
  /** `atl_` + 8 characters: the only part of a key that may be logged. */
  readonly keyPrefix: string;
  /** The organization's usage as its verification reported it: admission checks the ceiling against it. */
  readonly usage?: CallerUsage;
}

export interface PresentedCredentials {
  readonly authorization: string | undefined;
  /** Every Authorization line when the request repeated it (Node keeps only the first in `authorization`). */
  readonly authorizationHeaders?: readonly string[];
  readonly apiKeyHeader: string | string[] | undefined;
  /** The caller's address (socket, or as trusted proxies reported it); absent outside HTTP. */
  readonly clientAddress?: string;
  /** Told the prefix of a well-formed key once read, so a refusal's log line can name the key. */
  readonly onKeyPrefix?: (keyPrefix: string) => void;
  /** Told when a key seen to verify here could not be served for the gateway's own trouble: no flood, no delay. */
  readonly onKnownKeyUnserved?: () => void;
}

/** Turns presented credentials into a principal, or throws ApiError (401/403/503). */
export interface Authenticator {
  authenticate(credentials: PresentedCredentials): Promise<Principal>;
}
