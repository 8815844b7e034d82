/** Who is calling: known only after the key has been verified. */
export interface Principal {
  readonly organizationId: string;
  readonly keyId: string;
  /** `atl_` + 8 characters: the only part of a key that may be logged. */
  readonly keyPrefix: string;
}

/** The credentials a request presented, as raw header values and suspicious query names. */
export interface PresentedCredentials {
  readonly authorization: string | undefined;
  /**
   * Every Authorization header line when the request repeated it (Node keeps only the
   * first in `authorization`); absent or one value otherwise.
   */
  readonly authorizationHeaders?: readonly string[];
  readonly apiKeyHeader: string | string[] | undefined;
  /** Query parameter names that look like a key was put in the URL. */
  readonly keyLikeQueryParameters: readonly string[];
  /** Told the prefix of a well-formed key once read, so a refusal's log line can name the key. */
  readonly onKeyPrefix?: (keyPrefix: string) => void;
}

/** Turns presented credentials into a principal, or throws ApiError (401/403/503). */
export interface Authenticator {
  authenticate(credentials: PresentedCredentials): Promise<Principal>;
}
