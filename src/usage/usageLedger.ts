/**
 * The ceiling's view of usage delivery, per organization (src/usage/README.md): the
 * delivery loop tells the instance it runs in what became of the calls it delivers,
 * whichever instance recorded them: the counts are summed over instances.
 */
export interface UsageLedger {
  /** Calls admitted by an earlier instance (a spool), now kept here until acknowledged. */
  adopted(organizationId: string, calls: number): void;
  /** A batch is on its way to the key service (informational). */
  sending(organizationId: string, calls: number): void;
  /** The key service acknowledged them: every verification sent from now on includes them in `used`. */
  acknowledged(organizationId: string, calls: number): void;
  /** The key service refused them as malformed: they are not counted anywhere. */
  dropped(organizationId: string, calls: number): void;
  /** Whether the organization's last admission left it near its ceiling: its calls go out at once. */
  isNearCeiling(organizationId: string): boolean;
  /** Called before a verify is sent (`organizationId`: the key's organization, when known). */
  beforeVerify(organizationId: string | undefined): Promise<VerifySent>;
}

/** The acknowledged calls counted when a verify was sent: all of them are in its `used`. */
export interface VerifySent {
  /**
   * For the organization the answer names; null when they could not be read for it (a
   * shared count needs the organization beforehand): the caller verifies again, knowing it.
   */
  acknowledgedFor(organizationId: string): number | null;
  /** The verify is over (answered or failed). */
  end(): void;
}

/**
 * One instance's counts for one organization. `waiting`: calls recorded here (or adopted)
 * and not yet acknowledged or dropped, as the delivery loop told this instance (it may go
 * below zero when this instance delivers calls another recorded: the sum over instances
 * holds). `acknowledged`: every acknowledgement told here. `inFlight`: calls admitted and
 * not yet recorded or given back, places held in advance included.
 */
export interface CallCounts {
  waiting: number;
  acknowledged: number;
  inFlight: number;
  nearCeiling: boolean;
}

/** One instance's counts by organization, and the delivery seam over them. */
export function createCallCounts(): {
  readonly ledger: Omit<UsageLedger, 'beforeVerify'>;
  countsOf(organizationId: string): CallCounts;
  readonly all: ReadonlyMap<string, CallCounts>;
} {
  // One small entry per organization this instance has served: bounded by the customers.
  const all = new Map<string, CallCounts>();
  const countsOf = (organizationId: string): CallCounts => {
    let counts = all.get(organizationId);
    if (!counts) {
      counts = { waiting: 0, acknowledged: 0, inFlight: 0, nearCeiling: false };
      all.set(organizationId, counts);
    }
    return counts;
  };
  return {
    all,
    countsOf,
    ledger: {
      adopted(organizationId, calls) {
        countsOf(organizationId).waiting += calls;
      },
      sending() {},
      acknowledged(organizationId, calls) {
        const counts = countsOf(organizationId);
        counts.waiting -= calls;
        counts.acknowledged += calls;
      },
      dropped(organizationId, calls) {
        countsOf(organizationId).waiting -= calls;
      },
      isNearCeiling: (organizationId) => all.get(organizationId)?.nearCeiling ?? false,
    },
  };
}
