/**
 * The calls counted against an organization's usage ceiling, per organization: how many
 * were admitted (in flight included), how many the key service acknowledged, and how many
 * were sent but not yet acknowledged (the service may or may not have counted them).
 *
 * A verification's `used` includes every call acknowledged before the verify was sent,
 * and at most the calls acknowledged or in doubt when it answered. So a call leaves the
 * ceiling count only once a snapshot asked after its acknowledgement includes it; calls
 * whose inclusion is unknown keep counting (never over the ceiling), and the authenticator
 * asks again when only they decide the answer.
 *
 * createUsageLedger counts this instance's calls in memory; with Redis every instance
 * counts in one shared ledger (sharedUsageLedger.ts) behind the same interface.
 */

export interface Admission {
  /** The call failed: it will not be counted. Idempotent. */
  release(): void;
}

/** What one verification of an organization may include of the gateway's calls. */
export interface SnapshotMarks {
  /** Calls acknowledged before the verify was sent: surely in `used`. */
  readonly surelyIncluded: number;
  /** Calls acknowledged or in doubt when it answered: at most this many are in `used`. */
  readonly maybeIncluded: number;
}

/** The organization's usage as a verification reported it. */
export interface UsageSnapshot {
  readonly used: number;
  readonly ceiling: number | null;
  readonly periodEnd: Date;
}

/** Opened when a verify is sent, closed with the answer's organization. */
export interface SnapshotWindow {
  close(organizationId: string, usage: UsageSnapshot): SnapshotMarks | Promise<SnapshotMarks>;
  /** The verify failed or found no key. */
  discard(): void;
}

/** One call checked against the organization's ceiling, with the verification it is checked against. */
export interface CeilingClaim {
  readonly organizationId: string;
  readonly usage: UsageSnapshot;
  readonly marks: SnapshotMarks;
  /** Headroom (calls) below which the organization counts as near its ceiling. */
  readonly nearCeilingMargin: number;
}

/**
 * The outcome of a claim. `refused`: the ceiling is reached; `inDoubt`: only calls whose
 * inclusion in `used` is unknown reach it, so a verification asked once they settle may
 * admit; `unseeded`: the shared count has no verification of this period yet, so one
 * must be asked (and the claim made again).
 */
export type ClaimOutcome = { readonly admission: Admission } | { readonly refusal: 'refused' | 'inDoubt' | 'unseeded' };

export interface UsageLedger {
  /**
   * Checks the ceiling and counts the call in one step, so no two concurrent requests can
   * take the same place. Synchronous on one instance; a promise when the count is shared.
   * An organization without a ceiling is always admitted.
   */
  claim(request: CeilingClaim): ClaimOutcome | Promise<ClaimOutcome>;
  /** Calls still under the ceiling as far as this instance knows, for deciding how often to verify. */
  headroom(organizationId: string, usage: UsageSnapshot, marks: SnapshotMarks): number;
  /**
   * Opened before a verify is sent. `organizationId`: the organization the key belongs to,
   * when known from an earlier verification (a shared count needs it to mark the snapshot).
   */
  openSnapshot(organizationId: string | undefined): SnapshotWindow | Promise<SnapshotWindow>;
  /** Calls admitted by an earlier instance (a spool), now waiting here for the key service. */
  adopted(organizationId: string, calls: number): void;
  /** A batch is on its way to the key service for the first time. */
  sending(organizationId: string, calls: number): void;
  /** The key service acknowledged them: from now on every new verification includes them. */
  acknowledged(organizationId: string, calls: number): void;
  /** The key service refused them as malformed: they are not counted anywhere. */
  dropped(organizationId: string, calls: number): void;
  /** Whether the organization's last admitted call was near its ceiling. */
  isNearCeiling(organizationId: string): boolean;
  /** Resolves once no call of the organization is in doubt, or after `timeoutMs`. */
  settled(organizationId: string, timeoutMs: number): Promise<void>;
  /** Gives back what it holds and stops its timers. */
  close(): Promise<void>;
}

/** The ledger of one instance on its own: its calls only, counted in memory. */
export interface LocalUsageLedger extends UsageLedger {
  /**
   * Counts a call that is being served; release() it if it fails. `nearCeiling`: whether the
   * organization is near its ceiling, so its calls are sent to the key service at once and
   * other instances see them in `used` without waiting.
   */
  admit(organizationId: string, nearCeiling: boolean): Admission;
  /** Calls admitted here that a snapshot with these marks may not include: the ceiling counts them. */
  unseen(organizationId: string, marks: SnapshotMarks): number;
  /** Of those, the calls it surely does not include. */
  surelyUnseen(organizationId: string, marks: SnapshotMarks): number;
  openSnapshot(organizationId?: string): SnapshotWindow;
}

/** `used >= ceiling`, counting the calls `used` does not include (in flight too). */
export function ceilingReached(usage: UsageSnapshot, unseenCalls: number): boolean {
  return usage.ceiling !== null && usage.used + unseenCalls >= usage.ceiling;
}

interface Counts {
  admitted: number;
  acknowledged: number;
  inDoubt: number;
  nearCeiling: boolean;
}

export function createUsageLedger(): LocalUsageLedger {
  // One small entry per organization this instance has served: bounded by the customers.
  const byOrganization = new Map<string, Counts>();
  const openWindows = new Set<Map<string, number>>();
  const waiters = new Set<{ organizationId: string; wake: () => void }>();

  const countsOf = (organizationId: string): Counts => {
    let counts = byOrganization.get(organizationId);
    if (!counts) {
      counts = { admitted: 0, acknowledged: 0, inDoubt: 0, nearCeiling: false };
      byOrganization.set(organizationId, counts);
    }
    return counts;
  };

  const wakeSettled = (organizationId: string, counts: Counts): void => {
    if (counts.inDoubt > 0) return;
    for (const waiter of waiters) {
      if (waiter.organizationId === organizationId) waiter.wake();
    }
  };

  const admit = (organizationId: string, nearCeiling: boolean): Admission => {
    const counts = countsOf(organizationId);
    counts.admitted += 1;
    counts.nearCeiling = nearCeiling;
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        counts.admitted -= 1;
      },
    };
  };
  const unseen = (organizationId: string, marks: SnapshotMarks): number =>
    Math.max(0, countsOf(organizationId).admitted - marks.surelyIncluded);
  const surelyUnseen = (organizationId: string, marks: SnapshotMarks): number =>
    Math.max(0, countsOf(organizationId).admitted - marks.maybeIncluded);

  return {
    admit,
    unseen,
    surelyUnseen,

    claim({ organizationId, usage, marks, nearCeilingMargin }) {
      // Checked and counted in one synchronous step: no other request can take the same place.
      const notSurelyIncluded = unseen(organizationId, marks);
      if (ceilingReached(usage, notSurelyIncluded)) {
        // Reached only through calls the snapshot may already include: worth asking again once they settle.
        const inDoubt = !ceilingReached(usage, surelyUnseen(organizationId, marks));
        return { refusal: inDoubt ? 'inDoubt' : 'refused' };
      }
      const near = usage.ceiling !== null && usage.ceiling - usage.used - notSurelyIncluded <= nearCeilingMargin;
      return { admission: admit(organizationId, near) };
    },

    headroom: (organizationId, usage, marks) =>
      usage.ceiling === null ? Number.POSITIVE_INFINITY : usage.ceiling - usage.used - unseen(organizationId, marks),

    async close() {},

    openSnapshot() {
      const ackedDuring = new Map<string, number>();
      openWindows.add(ackedDuring);
      return {
        close(organizationId) {
          openWindows.delete(ackedDuring);
          const counts = countsOf(organizationId);
          return {
            surelyIncluded: counts.acknowledged - (ackedDuring.get(organizationId) ?? 0),
            maybeIncluded: counts.acknowledged + counts.inDoubt,
          };
        },
        discard() {
          openWindows.delete(ackedDuring);
        },
      };
    },

    adopted(organizationId, calls) {
      countsOf(organizationId).admitted += calls;
    },

    sending(organizationId, calls) {
      countsOf(organizationId).inDoubt += calls;
    },

    acknowledged(organizationId, calls) {
      const counts = countsOf(organizationId);
      counts.inDoubt -= calls;
      counts.acknowledged += calls;
      for (const window of openWindows) window.set(organizationId, (window.get(organizationId) ?? 0) + calls);
      wakeSettled(organizationId, counts);
    },

    dropped(organizationId, calls) {
      const counts = countsOf(organizationId);
      counts.inDoubt -= calls;
      counts.admitted -= calls;
      wakeSettled(organizationId, counts);
    },

    isNearCeiling: (organizationId) => byOrganization.get(organizationId)?.nearCeiling ?? false,

    settled(organizationId, timeoutMs) {
      if (countsOf(organizationId).inDoubt <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const waiter = {
          organizationId,
          wake: () => {
            clearTimeout(timer);
            waiters.delete(waiter);
            resolve();
          },
        };
        const timer = setTimeout(waiter.wake, timeoutMs);
        waiters.add(waiter);
      });
    },
  };
}
