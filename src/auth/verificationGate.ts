import { LRUCache } from 'lru-cache';
import { ApiError, UpstreamError } from '../errors.js';
import type { Verification } from '../upstream/keyServiceContract.js';
import type { KnownKeys } from './knownKeys.js';

/** Anyone can make keys that pass form and checksum: paying callers never queue behind them. */
export type VerificationLane = 'known' | 'refresh' | 'unseen';

/** Served in this order: a lane waits while a higher one has a waiter. */
const LANES: readonly VerificationLane[] = ['known', 'refresh', 'unseen'];

/** How the gate's size follows the key service (README.md beside this file, "The verification gate"). */
export const GATE = {
  /** Verifications open at once at the start, and never fewer. */
  initialOpen: 32,
  minOpen: 8,
  maxOpen: 64,
  /** A waiter whose turn comes after this long is refused rather than sent (the gateway: UPSTREAM_TIMEOUT_MS). */
  maxWaitMs: 5000,
  /** Waiters at most: a bound on memory, far above what a key service answering within the deadline leaves waiting. */
  maxWaiting: 4096,
  /** The share of open verifications kept free of unseen keys, for keys known to the fleet. */
  knownReserve: 1 / 4,
  retryAfterSeconds: 1,
} as const;

export type Verify = (keyHash: string) => Promise<Verification | null>;

export interface VerifyHow {
  /** `refresh`: a background re-verification of a cached key; else chosen by what is known of the key. */
  readonly lane?: 'refresh' | undefined;
  /** The organization when known (else the key itself): each freed place goes to the next organization in turn. */
  readonly organizationId?: string | undefined;
}

export interface VerificationGateOptions {
  /** What the fleet learned (with Redis: every instance); else this instance's own memory. */
  readonly knownKeys?: KnownKeys | undefined;
  readonly initialOpen?: number;
  readonly maxWaitMs?: number;
  readonly maxWaiting?: number;
}

interface Waiter {
  readonly group: Group;
  readonly since: number;
  readonly start: () => void;
  readonly refuse: (err: Error) => void;
}

interface Group {
  readonly id: string;
  readonly lane: VerificationLane;
  readonly waiting: Waiter[];
}

/** The gateway's own throttling (not the key service's failure): 503 `verification_busy`. */
export const verificationBusy = (): ApiError =>
  new ApiError('SERVICE_UNAVAILABLE', 'This instance is verifying too many API keys at once. Retry shortly.', {
    reason: 'verification_busy',
    headers: { 'Retry-After': String(GATE.retryAfterSeconds) },
  });

/**
 * Bounds the verify calls to the key service. Its size follows the key service: it grows by one while every place
 * is in use and answers come back, and shrinks by a quarter when the service says it is overloaded (429/503) or does
 * not answer in time. A waiter whose turn comes past `maxWaitMs` is refused without a call. Lanes first (known, refresh, unseen); within a lane, organizations (or keys) take turns (neither bottleneck
 * nor p-limit serves several queues in turn under one cap). With the room full, the group holding the most in the
 * lowest lane gives up its newest waiter.
 */
export function createVerificationGate(verify: Verify, options: VerificationGateOptions = {}) {
  const knownKeys = options.knownKeys;
  const maxWaitMs = options.maxWaitMs ?? GATE.maxWaitMs;
  const maxWaiting = options.maxWaiting ?? GATE.maxWaiting;
  // Key hashes seen to verify successfully, here or (with Redis) by the fleet: one per active key.
  const succeeded = new LRUCache<string, true>({ max: 10_000 });
  let open = options.initialOpen ?? GATE.initialOpen;
  let lastShrinkAt = Number.NEGATIVE_INFINITY;
  let running = 0;
  let runningUnseen = 0;
  let waiting = 0;
  /** Per lane, groups with a waiter, the next to be served first (a Map keeps insertion order). */
  const turns: Record<VerificationLane, Map<string, Group>> = {
    known: new Map(),
    refresh: new Map(),
    unseen: new Map(),
  };

  const unseenRoom = () => open - Math.max(1, Math.ceil(open * GATE.knownReserve));
  const mayStart = (lane: VerificationLane) => running < open && (lane !== 'unseen' || runningUnseen < unseenRoom());

  /** A place is given (before the waiter runs, so the next turn sees it taken). */
  const take = (lane: VerificationLane): void => {
    running += 1;
    if (lane === 'unseen') runningUnseen += 1;
  };

  const leave = (waiter: Waiter): void => {
    const { group } = waiter;
    group.waiting.splice(group.waiting.indexOf(waiter), 1);
    waiting -= 1;
    if (group.waiting.length === 0) turns[group.lane].delete(group.id);
  };

  const serveTurns = (): void => {
    for (const lane of LANES) {
      for (const group of turns[lane].values()) {
        if (!mayStart(lane)) return;
        const waiter = group.waiting[0];
        if (waiter === undefined) continue;
        leave(waiter);
        // Served: to the back of its lane's line, if it still waits.
        turns[lane].delete(group.id);
        if (group.waiting.length > 0) turns[lane].set(group.id, group);
        // Too late for an answer within its deadline: refused without a call.
        if (performance.now() - waiter.since > maxWaitMs) {
          waiter.refuse(verificationBusy());
          continue;
        }
        take(lane);
        waiter.start();
      }
      // A lower lane waits while this one has a waiter.
      if (turns[lane].size > 0) return;
    }
  };

  /** With the room full: the newest waiter of the group holding the most in the lowest lane, unless the newcomer's lane is lower. */
  const makeRoomFor = (lane: VerificationLane, groupId: string): boolean => {
    const lowest = [...LANES].reverse().find((candidate) => turns[candidate].size > 0);
    if (lowest === undefined || LANES.indexOf(lowest) < LANES.indexOf(lane)) return false;
    const groups = [...turns[lowest].values()];
    const biggest = groups.reduce((a, b) => (b.waiting.length > a.waiting.length ? b : a));
    if (lowest === lane && (turns[lane].get(groupId)?.waiting.length ?? 0) + 1 > biggest.waiting.length) return false;
    const newest = biggest.waiting.at(-1);
    if (newest === undefined) return false;
    leave(newest);
    newest.refuse(verificationBusy());
    return true;
  };

  const waitTurn = (lane: VerificationLane, groupId: string): Promise<void> => {
    if (waiting >= maxWaiting && !makeRoomFor(lane, groupId)) return Promise.reject(verificationBusy());
    return new Promise<void>((start, refuse) => {
      const group = turns[lane].get(groupId) ?? { id: groupId, lane, waiting: [] };
      group.waiting.push({ group, since: performance.now(), start, refuse });
      waiting += 1;
      turns[lane].set(groupId, group);
    });
  };

  /** Nobody of this lane or a higher one waits, and a place is free. */
  const startsNow = (lane: VerificationLane): boolean => {
    if (!mayStart(lane)) return false;
    for (const candidate of LANES) {
      if (turns[candidate].size > 0) return false;
      if (candidate === lane) return true;
    }
    return true;
  };

  const learn = (startedAt: number, err: unknown): void => {
    if (err === undefined) {
      // Grows only while calls wait for a place: a quiet gate says nothing of what the service can take.
      if ((waiting > 0 || running >= open - 1) && open < GATE.maxOpen) open += 1;
    } else if (
      err instanceof UpstreamError &&
      (err.failure === 'throttled' || err.failure === 'timeout') &&
      startedAt > lastShrinkAt
    ) {
      // Once per overload: the calls sent before the last shrink tell of the same one.
      open = Math.max(GATE.minOpen, Math.floor(open * 0.75));
      lastShrinkAt = performance.now();
    }
  };

  async function verifyInTurn(keyHash: string, lane: VerificationLane, groupId: string) {
    if (startsNow(lane)) take(lane);
    else await waitTurn(lane, groupId);
    const startedAt = performance.now();
    try {
      const verification = await verify(keyHash);
      learn(startedAt, undefined);
      return verification;
    } catch (err: unknown) {
      learn(startedAt, err);
      throw err;
    } finally {
      running -= 1;
      if (lane === 'unseen') runningUnseen -= 1;
      serveTurns();
    }
  }

  return {
    /** Verifies through the lanes: `known` for hashes seen to succeed, else `unseen`, unless told. */
    async verify(keyHash: string, how: VerifyHow = {}): Promise<Verification | null> {
      const lane = how.lane ?? (succeeded.has(keyHash) ? 'known' : 'unseen');
      const verification = await verifyInTurn(keyHash, lane, how.organizationId ?? keyHash);
      // A revoked key answers as an unknown one: it has not succeeded.
      if (verification === null || verification.key.revokedAt !== null) {
        if (succeeded.delete(keyHash)) knownKeys?.forget(keyHash);
      } else {
        succeeded.set(keyHash, true);
        knownKeys?.learn(keyHash);
      }
      return verification;
    },
    /** Seen to succeed here: read on every request, so only memory. */
    hasSucceeded: (keyHash: string) => succeeded.has(keyHash),
    /** Seen to succeed here or by any instance of the fleet; the fleet's word is remembered here. */
    async isKnown(keyHash: string): Promise<boolean> {
      if (succeeded.has(keyHash)) return true;
      if (!(await knownKeys?.has(keyHash))) return false;
      succeeded.set(keyHash, true);
      return true;
    },
    /** For tests and metrics: verifications allowed open now, running, waiting. */
    state: () => ({ open, running, waiting }),
  };
}
