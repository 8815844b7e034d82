import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';
import { OPEN_VERIFICATIONS } from './verificationGate.js';

const WINDOW_MS = 60_000;

/** Client addresses tracked at most; past it the least recently seen is forgotten (a fresh budget at worst). */
const MAX_CLIENTS = 50_000;

export interface FailedKeyBudgetOptions {
  /** Unknown keys one client address may present per minute before unseen keys are refused. */
  readonly perMinute: number;
  /** Verifications of unseen keys one address may have open at once; by default the gate's open lanes. */
  readonly inFlight?: number;
  readonly hasSucceeded: (keyHash: string) => boolean;
  readonly now: () => Date;
}

interface Window {
  readonly startedAt: number;
  /** Unknown keys this window, and unseen keys being verified (each reserved before its call). */
  spent: number;
  /** Unseen keys being verified right now. */
  open: number;
}

/**
 * Each client address may present a bounded number of unknown keys. A key never seen to succeed
 * reserves its place before its key-service call and keeps it only if unknown, so concurrent
 * callers never get past the budget together; a key seen to succeed always passes.
 */
export function withFailedKeyBudget(inner: Authenticator, options: FailedKeyBudgetOptions): Authenticator {
  const windows = new LRUCache<string, Window>({ max: MAX_CLIENTS });
  const inFlight = options.inFlight ?? OPEN_VERIFICATIONS;
  // Per address and unseen key: the first request reserves the place, the others share its
  // verification, so an export starting wide with a new key is not refused for its own concurrency.
  const waitingOnKey = new Map<string, number>();

  const currentWindow = (client: string, nowMs: number): Window => {
    const window = windows.get(client);
    if (window && nowMs - window.startedAt < WINDOW_MS) return window;
    // A new window starts with the verifications still open: their places are taken.
    const fresh = { startedAt: nowMs, spent: window?.open ?? 0, open: window?.open ?? 0 };
    windows.set(client, fresh);
    return fresh;
  };

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const client = credentials.clientAddress;
      const key = toWellFormedKey(presentedKeyText(credentials));
      // Malformed keys never reach the key service; credentials from outside HTTP are not budgeted.
      if (client === undefined || key === null) return inner.authenticate(credentials);
      if (options.hasSucceeded(key.keyHash)) {
        try {
          return await inner.authenticate(credentials);
        } catch (err: unknown) {
          // An outage (503), not a refusal of the key: a caller whose key has verified here is no flood.
          if (!(err instanceof ApiError) || err.status === 503) credentials.onKnownKeyUnserved?.();
          throw err;
        }
      }
      const slot = `${client} ${key.keyHash}`;
      const waiting = waitingOnKey.get(slot);
      const reserved = waiting === undefined;
      if (reserved) {
        const nowMs = options.now().getTime();
        const window = currentWindow(client, nowMs);
        if (window.spent >= options.perMinute || window.open >= inFlight) {
          const retryAfter = window.spent >= options.perMinute ? (window.startedAt + WINDOW_MS - nowMs) / 1000 : 1;
          throw authFailure('unknown_key_budget_spent', Math.max(1, Math.ceil(retryAfter)));
        }
        window.spent += 1;
        window.open += 1;
      }
      waitingOnKey.set(slot, (waiting ?? 0) + 1);
      let unknown = false;
      try {
        return await inner.authenticate(credentials);
      } catch (err: unknown) {
        unknown = err instanceof ApiError && err.reason === 'invalid_key';
        throw err;
      } finally {
        const left = (waitingOnKey.get(slot) ?? 1) - 1;
        if (left > 0) waitingOnKey.set(slot, left);
        else waitingOnKey.delete(slot);
        if (reserved) {
          // The window may have turned meanwhile: the place goes back to the one it is counted in.
          const window = currentWindow(client, options.now().getTime());
          window.open = Math.max(0, window.open - 1);
          if (!unknown) window.spent = Math.max(0, window.spent - 1);
        }
      }
    },
  };
}
