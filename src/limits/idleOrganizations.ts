import { type CallCounts, settled } from '../usage/usageLedger.js';

/**
 * An organization not admitted for this long, none of whose calls is on its way, is forgotten (src/usage/README.md,
 * "Bounded state"). Longer than a verification is ever served from cache, so a cached `acknowledgedBefore` never
 * meets counts that started again from zero.
 */
export const FORGET_AFTER_MS = 5 * 60_000;
/** How often an instance looks for organizations to forget. */
const SWEEP_EVERY_MS = 60_000;

/** When each organization was last admitted here, on the admission's own clock; the organizations kept are those. */
export function createLastSeen(now: () => number) {
  const seen = new Map<string, number>();
  let lastSweepMs = now();
  let latestMs = now();
  return {
    seen(organizationId: string): void {
      latestMs = now();
      seen.set(organizationId, latestMs);
    },
    /** Whether no organization was admitted for `ms`: the window of the last one admitted is over when `ms` is a window. */
    quietFor: (ms: number): boolean => now() - latestMs >= ms,
    /** Organizations tracked here (the `organizations_tracked` metric). */
    size: (): number => seen.size,
    /**
     * At most once per SWEEP_EVERY_MS: `forget` for each organization unseen for FORGET_AFTER_MS whose counts are
     * settled; it answers false to keep one that is busy. Counts of an organization never admitted here (calls
     * taken over and acknowledged) are seen from the first sweep that finds them.
     */
    sweep(all: ReadonlyMap<string, CallCounts>, forget: (organizationId: string) => boolean): void {
      const nowMs = now();
      if (nowMs - lastSweepMs < SWEEP_EVERY_MS) return;
      lastSweepMs = nowMs;
      for (const organizationId of all.keys()) if (!seen.has(organizationId)) seen.set(organizationId, nowMs);
      for (const [organizationId, lastMs] of seen) {
        if (nowMs - lastMs < FORGET_AFTER_MS) continue;
        const counts = all.get(organizationId);
        if (counts !== undefined && !settled(counts)) continue;
        if (forget(organizationId)) seen.delete(organizationId);
      }
    },
  };
}
