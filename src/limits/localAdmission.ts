import { createCallCounts, type UsageLedger } from '../usage/usageLedger.js';
import {
  type Admission,
  type AdmissionOptions,
  type CallerUsage,
  granted,
  NEAR_CEILING_MARGIN,
  refused,
  type TrackedState,
} from './admission.js';
import { fixedWindowAt } from './fixedWindow.js';
import { createLastSeen } from './idleOrganizations.js';
import { createWindowCounts } from './windowCounts.js';

/**
 * Admission without Redis: each process counts its own windows and its calls under the
 * ceiling in memory, in one synchronous check (src/usage/README.md, "What state lives where").
 */
export function createLocalAdmission(options: AdmissionOptions): Admission & TrackedState {
  const { requests, windowSeconds, now = Date.now } = options;
  const windowMs = windowSeconds * 1000;
  const policy = { limit: requests, windowSeconds };
  const taken = createWindowCounts();
  /** Per verification on its way: acknowledgements counted since it was sent, by organization. */
  const ackedSince = new Set<Map<string, number>>();
  const calls = createCallCounts((organizationId, count) => {
    for (const since of ackedSince) since.set(organizationId, (since.get(organizationId) ?? 0) + count);
  });
  /** Calls left under the ceiling for one more, by what this instance knows now. */
  const roomFor = (organizationId: string, usage: CallerUsage): number => {
    const { waiting, inFlight, acknowledged } = calls.countsOf(organizationId);
    const notIncluded = waiting + inFlight + acknowledged - usage.acknowledgedBefore;
    return (usage.ceiling ?? Number.POSITIVE_INFINITY) - usage.used - notIncluded;
  };

  /** Per organization with a ceiling, the verification its last request carried. */
  const lastUsage = new Map<string, CallerUsage>();
  const lastSeen = createLastSeen(now);
  const forget = (organizationId: string): boolean => {
    lastUsage.delete(organizationId);
    calls.forget(organizationId);
    return true;
  };
  const sweep = setInterval(() => {
    if (lastSeen.quietFor(windowMs)) taken.clear();
    lastSeen.sweep(calls.all, forget);
  }, 1000);
  sweep.unref();

  const ledger: UsageLedger = {
    ...calls.ledger,
    // Recomputed when asked: calls adopted from a spool move the room without a request.
    isNearCeiling(organizationId) {
      const usage = lastUsage.get(organizationId);
      return usage !== undefined && roomFor(organizationId, usage) - 1 <= NEAR_CEILING_MARGIN;
    },
    async beforeVerify() {
      const since = new Map<string, number>();
      ackedSince.add(since);
      return {
        acknowledgedFor: (organizationId) =>
          calls.countsOf(organizationId).acknowledged - (since.get(organizationId) ?? 0),
        end: () => ackedSince.delete(since),
      };
    },
  };

  return {
    ledger,
    take(organizationId, nowMs, usage) {
      const window = fixedWindowAt(nowMs, windowMs);
      lastSeen.seen(organizationId);
      const decision = { limit: requests, resetSeconds: window.resetSeconds, windowSeconds };
      // Counted with a ceiling or without: its calls count as soon as one is set.
      const counts = calls.countsOf(organizationId);
      if (usage?.ceiling != null) {
        lastUsage.set(organizationId, usage);
        const room = roomFor(organizationId, usage);
        if (room < 1) {
          const doubt = counts.sending + Math.max(0, counts.acknowledged - usage.acknowledgedBefore);
          return refused(decision, requests - taken.get(organizationId, window.index), true, room + doubt >= 1);
        }
      } else lastUsage.delete(organizationId);
      const count = taken.add(organizationId, window.index);
      if (count > requests) {
        taken.add(organizationId, window.index, -1);
        return refused(decision, 0, false);
      }
      counts.inFlight += 1;
      return granted(policy, window.resetSeconds, requests - count, (kept, limitToo) => {
        counts.inFlight -= 1;
        if (kept) {
          counts.waiting += 1;
          counts.held += 1;
        } else if (limitToo) taken.remove(organizationId, window.index);
      });
    },
    available: () => true,
    trackedOrganizations: lastSeen.size,
    async close() {
      clearInterval(sweep);
      taken.clear();
      ackedSince.clear();
    },
  };
}
