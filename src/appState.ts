import type { Principal } from './auth/principal.js';

/** What the middleware chain learns about a request, in the order it learns it. */
export interface AppState {
  requestId: string;
  /** The matched public route's path, for logs and metrics (never the raw URL). */
  route?: string;
  /** Set by authentication; absent on unauthenticated paths. */
  principal?: Principal;
  /** The refusal's stable reason (or error code), for the log line; absent on success. */
  refusal?: string;
}
