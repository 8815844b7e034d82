import { createCallCounts, type UsageLedger } from '../usage/usageLedger.js';
import { type Admission, type CallerUsage, ceilingRoom, type Grant, NEAR_CEILING_MARGIN } from './admission.js';
import { fixedWindowAt } from './fixedWindow.js';
import { createWindowCounts } from './windowCounts.js';

export interface AdmissionOptions {
  /** RATE_LIMIT_REQUESTS: allowance per organization per window. */
  readonly requests: number;
  /** RATE_LIMIT_WINDOW_SECONDS. */
  readonly windowSeconds: number;
}

/**
 * Admission without Redis: each process counts its own fixed windows and its own calls
 * under the ceiling, in memory, in one synchronous check. With N instances an
 * organization gets up to N times the allowance, and each instance sees the others'
 * calls only once the key service has counted them.
 */
export function createLocalAdmission(options: AdmissionOptions): Admission & { readonly ledger: UsageLedger } {
  const { requests, windowSeconds } = options;
  const windowMs = windowSeconds * 1000;
  const taken = createWindowCounts();
  const calls = createCallCounts();
  /** Per verification on its way: acknowledgements counted since it was sent, by organization. */
  const ackedSince = new Set<Map<string, number>>();
  /** Per organization with a ceiling, the verification its last request carried. */
  const lastUsage = new Map<string, CallerUsage>();
  /** Calls left under the ceiling for one more, by what this instance knows now. */
  const roomFor = (organizationId: string, usage: CallerUsage): number => {
    const counts = calls.countsOf(organizationId);
    return ceilingRoom(usage, counts.waiting + counts.inFlight + counts.acknowledged - usage.acknowledgedBefore);
  };

  const ledger: UsageLedger = {
    ...calls.ledger,
    isNearCeiling(organizationId) {
      const usage = lastUsage.get(organizationId);
      return usage !== undefined && roomFor(organizationId, usage) - 1 <= NEAR_CEILING_MARGIN;
    },
    acknowledged(organizationId, count) {
      calls.ledger.acknowledged(organizationId, count);
      for (const since of ackedSince) since.set(organizationId, (since.get(organizationId) ?? 0) + count);
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
    async take(organizationId, nowMs, usage) {
      const window = fixedWindowAt(nowMs, windowMs);
      const decision = { limit: requests, resetSeconds: window.resetSeconds, windowSeconds };
      // Counted with a ceiling or without: its calls count as soon as one is set.
      const counts = calls.countsOf(organizationId);
      if (usage && usage.ceiling !== null) {
        lastUsage.set(organizationId, usage);
        if (roomFor(organizationId, usage) < 1) {
          return refused(decision, requests - taken.get(organizationId, window.index), true);
        }
      } else lastUsage.delete(organizationId);
      const count = taken.add(organizationId, window.index);
      if (count > requests) {
        taken.add(organizationId, window.index, -1);
        return refused(decision, 0, false);
      }
      counts.inFlight += 1;
      let given = false;
      // Fields spelled out, not spread from `decision`: Node 20's V8 builds an object spread followed
      // by more fields slowly, and this runs on every request.
      const grant: Grant = {
        limit: requests,
        resetSeconds: window.resetSeconds,
        windowSeconds,
        allowed: true,
        ceilingReached: false,
        remaining: requests - count,
        keep() {
          if (given) return;
          given = true;
          counts.inFlight -= 1;
          counts.waiting += 1;
        },
        giveBack(limitToo) {
          if (given) return;
          given = true;
          counts.inFlight -= 1;
          if (limitToo) taken.add(organizationId, window.index, -1);
        },
      };
      return grant;
    },
    available: () => true,
    async close() {
      taken.clear();
      ackedSince.clear();
    },
  };
}

/** A refusal: nothing taken, nothing to give back. */
export function refused(
  decision: { limit: number; resetSeconds: number; windowSeconds: number },
  remaining: number,
  ceilingReached: boolean,
): Grant {
  return { ...decision, allowed: false, remaining: Math.max(0, remaining), ceilingReached, keep() {}, giveBack() {} };
}
