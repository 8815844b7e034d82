/** What the delivery loop tells the ceiling's count, per organization (README.md): only sums over instances mean anything. */
export interface UsageLedger {
  /** Calls recorded by another instance (a spool, or with Redis its entries taken over), now kept here until acknowledged. */
  adopted(organizationId: string, calls: number): void;
  /** On their way to the key service: counted there or not, until acknowledged or dropped. */
  sending(organizationId: string, calls: number): void;
  /** The key service acknowledged them: every verification sent from now on includes them in `used`. */
  acknowledged(organizationId: string, calls: number): void;
  /** The key service refused them as malformed: they are not counted anywhere. */
  dropped(organizationId: string, calls: number): void;
  /** Adopted calls whose other copy another instance delivered and told acknowledged: done here, told nowhere twice. */
  repeated(organizationId: string, calls: number): void;
  /** Whether the organization's last admission left it near its ceiling: its calls go out at once. */
  isNearCeiling(organizationId: string): boolean;
  /** Called before a verify is sent (`organizationId`: the key's organization, when known). */
  beforeVerify(organizationId: string | undefined): Promise<VerifySent>;
}

/** The acknowledged calls counted when a verify was sent: all of them are in its `used`. */
export interface VerifySent {
  /** For the organization the answer names; null when not read for it: the caller verifies again, knowing it. */
  acknowledgedFor(organizationId: string): number | null;
  /** The verify is over (answered or failed). */
  end(): void;
}

/** One instance's counts for one organization (README.md, "The ceiling's arithmetic"); `waiting` may go below zero. */
export interface CallCounts {
  waiting: number;
  /** Calls this instance keeps until the key service has them, its own and those it took in: never below zero. */
  held: number;
  /** The end (ms) of the period `waiting` counts for; 0 when not known. */
  periodEnd: number;
  acknowledged: number;
  inFlight: number;
  /** Of `waiting`, on their way to the key service. */
  sending: number;
  nearCeiling: boolean;
}

/** Nothing of the organization is admitted, recorded or on its way here; a negative `waiting` (calls of another instance acknowledged here) is a settled offset. */
export const settled = (counts: CallCounts): boolean =>
  counts.inFlight === 0 && counts.sending === 0 && counts.waiting <= 0 && counts.held === 0;

/**
 * A new period counts what this instance keeps, nothing more: calls of other instances it acknowledged
 * (a negative `waiting`) offset their fields of the period that ended, which the new one does not count.
 */
export function startPeriod(counts: CallCounts, periodEnd: number): void {
  counts.waiting = counts.held;
  counts.periodEnd = periodEnd;
}

/** One instance's counts by organization, and the delivery seam over them; `changed` hears of each send, acknowledgement or drop. */
export function createCallCounts(changed: (organizationId: string, acknowledged: number) => void): {
  readonly ledger: Omit<UsageLedger, 'beforeVerify'>;
  countsOf(organizationId: string): CallCounts;
  readonly all: ReadonlyMap<string, CallCounts>;
  /** Drops an organization none of whose calls is on its way here (`settled`): it counts from zero again. */
  forget(organizationId: string): void;
} {
  const all = new Map<string, CallCounts>();
  const countsOf = (organizationId: string): CallCounts => {
    let counts = all.get(organizationId);
    if (!counts) {
      counts = { waiting: 0, held: 0, periodEnd: 0, acknowledged: 0, inFlight: 0, sending: 0, nearCeiling: false };
      all.set(organizationId, counts);
    }
    return counts;
  };
  /** Calls on their way are done with: `acknowledged` of them counted by the key service, the rest dropped. */
  const delivered = (organizationId: string, calls: number, acknowledged: number): void => {
    const counts = countsOf(organizationId);
    counts.waiting -= calls;
    counts.held = Math.max(0, counts.held - calls);
    counts.sending -= calls;
    counts.acknowledged += acknowledged;
    changed(organizationId, acknowledged);
  };
  return {
    all,
    countsOf,
    forget: (organizationId) => all.delete(organizationId),
    ledger: {
      adopted(organizationId, calls) {
        const counts = countsOf(organizationId);
        counts.waiting += calls;
        counts.held += calls;
      },
      sending(organizationId, calls) {
        countsOf(organizationId).sending += calls;
        changed(organizationId, 0);
      },
      acknowledged: (organizationId, calls) => delivered(organizationId, calls, calls),
      repeated(organizationId, calls) {
        const counts = countsOf(organizationId);
        counts.held = Math.max(0, counts.held - calls);
        counts.sending -= calls;
        changed(organizationId, 0);
      },
      dropped: (organizationId, calls) => delivered(organizationId, calls, 0),
      isNearCeiling: (organizationId) => all.get(organizationId)?.nearCeiling ?? false,
    },
  };
}
