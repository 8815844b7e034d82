import { isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';
import { LRUCache } from 'lru-cache';
import { ApiError } from '../errors.js';
import { authFailure } from './authFailures.js';
import { presentedKeyText } from './credentials.js';
import { toWellFormedKey } from './keyFormat.js';
import type { Authenticator, PresentedCredentials, Principal } from './principal.js';
import { verificationBusy } from './verificationGate.js';

const WINDOW_MS = 60_000;

/** Client addresses tracked at most; past it the least recently seen is forgotten (a fresh budget at worst). */
const MAX_CLIENTS = 50_000;

/** Verifications of keys new to the fleet one address may have open at once; the rest wait their turn. */
export const OPEN_PER_CLIENT = 8;

/** New keys of one address waiting for a place at most; beyond, the gateway's own refusal (503), never "unknown". */
const WAITING_PER_CLIENT = 256;

export interface FailedKeyBudgetOptions {
  /** Keys that failed verification one client (an IPv4 address, an IPv6 /64) may present per minute. */
  readonly perMinute: number;
  /** Verifications of new keys one client may have open at once (OPEN_PER_CLIENT by default). */
  readonly inFlight?: number;
  /** Seen to succeed here: read on every request, so only memory. */
  readonly hasSucceeded: (keyHash: string) => boolean;
  /** Seen to succeed here or by the fleet: asked only for keys new to this instance. */
  readonly isKnown?: (keyHash: string) => Promise<boolean>;
  readonly now: () => Date;
}

interface Client {
  windowStartedAt: number;
  /** Keys that failed verification this window. */
  failed: number;
  /** New keys being verified right now. */
  open: number;
  /** Waiting for a place: told to look again when one is given back. */
  readonly waiting: Array<() => void>;
}

/**
 * The budget's unit: an IPv4 address, or the /64 an IPv6 address is in (one host or network is given a whole /64, so
 * its addresses are one client); an IPv4-mapped IPv6 address is its IPv4 address.
 */
export function budgetClientOf(address: string): string {
  if (!isIPv6(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  return `${parsed.parts
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}

/**
 * Each client may present a bounded number of keys that fail verification per minute. A key new to the fleet takes
 * a place before its key-service call; it counts against the budget only if it failed. While the failures and the
 * places taken could reach the budget, or the client has its open places in use, a new key waits for a place rather
 * than being refused: so concurrent callers never get past the budget together, and a valid key is never refused as
 * unknown. A key seen to succeed (here, or by the fleet) always passes.
 */
export function withFailedKeyBudget(inner: Authenticator, options: FailedKeyBudgetOptions): Authenticator {
  const clients = new LRUCache<string, Client>({ max: MAX_CLIENTS });
  const inFlight = options.inFlight ?? OPEN_PER_CLIENT;
  // Per client and new key: the first request takes the place, the others share its verification,
  // so an export starting wide with a new key is not refused for its own concurrency.
  const sharing = new Map<string, { requests: number; readonly place: Promise<unknown> }>();

  const clientOf = (id: string, nowMs: number): Client => {
    let client = clients.get(id);
    if (!client) {
      client = { windowStartedAt: nowMs, failed: 0, open: 0, waiting: [] };
      clients.set(id, client);
    } else if (nowMs - client.windowStartedAt >= WINDOW_MS) {
      client.windowStartedAt = nowMs;
      client.failed = 0;
    }
    return client;
  };

  const spent = (client: Client, nowMs: number) => {
    const retryAfter = (client.windowStartedAt + WINDOW_MS - nowMs) / 1000;
    return authFailure('unknown_key_budget_spent', Math.max(1, Math.ceil(retryAfter)));
  };

  /** Takes a place for one new key's verification, waiting while the budget could be passed. */
  async function takePlace(id: string): Promise<Client> {
    for (;;) {
      const nowMs = options.now().getTime();
      const client = clientOf(id, nowMs);
      if (client.failed >= options.perMinute) throw spent(client, nowMs);
      if (client.open < inFlight && client.failed + client.open < options.perMinute) {
        client.open += 1;
        return client;
      }
      if (client.waiting.length >= WAITING_PER_CLIENT) throw verificationBusy();
      await new Promise<void>((wake) => client.waiting.push(wake));
    }
  }

  const givePlace = (id: string, failed: boolean): void => {
    const client = clientOf(id, options.now().getTime());
    client.open = Math.max(0, client.open - 1);
    if (failed) client.failed += 1;
    // All look again: a failure may have spent the budget for every one of them.
    for (const wake of client.waiting.splice(0)) wake();
  };

  return {
    async authenticate(credentials: PresentedCredentials): Promise<Principal> {
      const address = credentials.clientAddress;
      const key = toWellFormedKey(presentedKeyText(credentials));
      // Malformed keys never reach the key service; credentials from outside HTTP are not budgeted.
      if (address === undefined || key === null) return inner.authenticate(credentials);
      if (options.hasSucceeded(key.keyHash) || (await options.isKnown?.(key.keyHash))) {
        try {
          return await inner.authenticate(credentials);
        } catch (err: unknown) {
          // An outage (503), not a refusal of the key: a caller whose key has verified is no flood.
          if (!(err instanceof ApiError) || err.status === 503) credentials.onKnownKeyUnserved?.();
          throw err;
        }
      }
      const id = budgetClientOf(address);
      const slot = `${id} ${key.keyHash}`;
      let shared = sharing.get(slot);
      const first = shared === undefined;
      shared ??= { requests: 0, place: takePlace(id) };
      sharing.set(slot, shared);
      shared.requests += 1;
      let placed = false;
      let failed = false;
      try {
        await shared.place;
        placed = first;
        return await inner.authenticate(credentials);
      } catch (err: unknown) {
        failed = err instanceof ApiError && err.reason === 'invalid_key';
        throw err;
      } finally {
        shared.requests -= 1;
        if (shared.requests === 0 && sharing.get(slot) === shared) sharing.delete(slot);
        if (placed) givePlace(id, failed);
      }
    },
  };
}
