import type { Principal } from './auth/principal.js';

/** What the middleware chain learns about a request, in the order it learns it. */
export interface AppState {
  requestId: string;
  /** The matched public route's path, for logs and metrics (never the raw URL). */
  route?: string;
  /** Set by authentication; absent on unauthenticated paths. */
  principal?: Principal;
  /** The prefix of the key presented, once read: logged even when the key is refused. */
  keyPrefix?: string;
  /** A key seen to verify here could not be served for the gateway's own trouble: its 503 is not delayed. */
  knownKeyUnserved?: true;
  /** The `reason` of a refusal (e.g. `expired_key`), for the request's log line. */
  refusal?: string;
}
