import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';

/** The budget is counted in fixed windows of this length. */
const WINDOW_MS = 60_000;

/**
 * Client addresses tracked at most. Each costs an address and two numbers; past the
 * bound the least recently seen is forgotten, which at worst gives it a fresh budget.
 */
const MAX_CLIENTS = 50_000;

export interface FailedKeyBudgetOptions {
  /** Unknown keys one client address may present per minute before unseen keys are refused. */
  readonly perMinute: number;
  /** Whether this instance has seen the key hash verify successfully: such keys never meet the budget. */
  readonly hasSucceeded: (keyHash: string) => boolean;
  readonly now: () => Date;
}

interface Window {
  readonly startedAt: number;
  failures: number;
}

/**
 * Each client address may present a bounded number of keys that turn out unknown; once
 * spent, keys this instance has never seen succeed are refused 429 before any key-service
 * call. A key seen to succeed passes whatever the budget, and a legitimate key never spends
 * it, so a paying caller behind a busy address is not refused.
 * Credentials without a client address (not from HTTP) are not budgeted.
 */
export function withFailedKeyBudget(inner: Authenticator, options: FailedKeyBudgetOptions): Authenticator {
  const windows = new LRUCache<string, Window>({ max: MAX_CLIENTS });

  const currentWindow = (client: string, nowMs: number): Window => {
    const window = windows.get(client);
    if (window && nowMs - window.startedAt < WINDOW_MS) return window;
    const fresh = { startedAt: nowMs, failures: 0 };
    windows.set(client, fresh);
    return fresh;
  };

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const client = credentials.clientAddress;
      if (client === undefined) return inner.authenticate(credentials);
      const nowMs = options.now().getTime();
      const window = windows.get(client);
      if (window && window.failures >= options.perMinute && nowMs - window.startedAt < WINDOW_MS) {
        const key = toWellFormedKey(presentedKeyText(credentials));
        if (key !== null && !options.hasSucceeded(key.keyHash)) {
          throw authFailure('unknown_key_budget_spent', Math.ceil((window.startedAt + WINDOW_MS - nowMs) / 1000));
        }
      }
      try {
        return await inner.authenticate(credentials);
      } catch (err: unknown) {
        if (err instanceof ApiError) {
          if (err.reason === 'invalid_key') currentWindow(client, nowMs).failures += 1;
        } else {
          // Not a refusal of the key but an outage (503): a caller whose key has verified here is no flood.
          const key = toWellFormedKey(presentedKeyText(credentials));
          if (key !== null && options.hasSucceeded(key.keyHash)) credentials.onKnownKeyUnserved?.();
        }
        throw err;
      }
    },
  };
}
