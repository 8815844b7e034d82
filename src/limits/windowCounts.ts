/**
 * Per organization, how many requests this process counted in the latest window it
 * saw. Older windows are dropped as soon as a later one is counted: nothing here is
 * ever needed once its window is over, and the map stays a few entries per organization.
 */
export interface WindowCounts {
  /** Adds `by` (default 1) to the organization's count in window `windowIndex`; returns the new count. */
  add(organizationId: string, windowIndex: number, by?: number): number;
  /** The organization's count in window `windowIndex` (0 for a window already dropped). */
  get(organizationId: string, windowIndex: number): number;
  /** The latest window and its counts. */
  latest(): { readonly windowIndex: number; readonly counts: ReadonlyMap<string, number> };
  clear(): void;
}

export function createWindowCounts(): WindowCounts {
  let windowIndex = -Infinity;
  let counts = new Map<string, number>();
  return {
    add(organizationId, index, by = 1) {
      if (index > windowIndex) {
        windowIndex = index;
        counts = new Map();
      }
      // A moment from an earlier window (the clock stepped back) is counted in the latest one: never fewer.
      const count = (counts.get(organizationId) ?? 0) + by;
      counts.set(organizationId, count);
      return count;
    },
    get: (organizationId, index) => (index === windowIndex ? (counts.get(organizationId) ?? 0) : 0),
    latest: () => ({ windowIndex, counts }),
    clear() {
      counts = new Map();
    },
  };
}
