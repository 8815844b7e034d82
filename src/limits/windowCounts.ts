/** Per organization, the requests this process counted in the latest window it saw; older windows are dropped. */
export function createWindowCounts() {
  let windowIndex = Number.NEGATIVE_INFINITY;
  let counts = new Map<string, number>();
  return {
    /** Adds `by` to the organization's count in window `index`; returns the new count. */
    add(organizationId: string, index: number, by = 1): number {
      if (index > windowIndex) {
        windowIndex = index;
        counts = new Map();
      }
      // A moment from an earlier window (the clock stepped back) is counted in the latest one: never fewer.
      const count = (counts.get(organizationId) ?? 0) + by;
      counts.set(organizationId, count);
      return count;
    },
    /** Gives `by` back to window `index` only: a unit of a window already over is not given to the next. */
    remove(organizationId: string, index: number, by = 1): void {
      const count = index === windowIndex ? counts.get(organizationId) : undefined;
      if (count === undefined) return;
      if (count > by) counts.set(organizationId, count - by);
      else counts.delete(organizationId);
    },
    /** The organization's count in window `index` (0 for a window already dropped). */
    get: (organizationId: string, index: number): number =>
      index === windowIndex ? (counts.get(organizationId) ?? 0) : 0,
    latest: (): { readonly windowIndex: number; readonly counts: ReadonlyMap<string, number> } => ({
      windowIndex,
      counts,
    }),
    clear(): void {
      counts = new Map();
    },
  };
}
