/**
 * This instance's calls per organization, as the ceiling check needs them: how many it
 * admitted (in flight included), how many the key service acknowledged, and how many
 * were sent but not yet acknowledged (the service may or may not have counted them).
 *
 * A verification's `used` includes every call acknowledged before the verify was sent,
 * and at most the calls acknowledged or in doubt when it answered. So a call leaves the
 * ceiling count only once a snapshot asked after its acknowledgement includes it; calls
 * whose inclusion is unknown keep counting (never over the ceiling), and the authenticator
 * asks again when only they decide the answer.
 */

export interface Admission {
  /** The call failed: it will not be counted. Idempotent. */
  release(): void;
}

/** What one verification of an organization may include of this instance's calls. */
export interface SnapshotMarks {
  /** Calls acknowledged before the verify was sent: surely in `used`. */
  readonly surelyIncluded: number;
  /** Calls acknowledged or in doubt when it answered: at most this many are in `used`. */
  readonly maybeIncluded: number;
}

/** Opened when a verify is sent, closed with the answer's organization. */
export interface SnapshotWindow {
  close(organizationId: string): SnapshotMarks;
  /** The verify failed or found no key. */
  discard(): void;
}

export interface UsageLedger {
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
  openSnapshot(): SnapshotWindow;
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
}

interface Counts {
  admitted: number;
  acknowledged: number;
  inDoubt: number;
  nearCeiling: boolean;
}

export function createUsageLedger(): UsageLedger {
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

  return {
    admit(organizationId, nearCeiling) {
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
    },

    unseen: (organizationId, marks) => Math.max(0, countsOf(organizationId).admitted - marks.surelyIncluded),

    surelyUnseen: (organizationId, marks) => Math.max(0, countsOf(organizationId).admitted - marks.maybeIncluded),

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
