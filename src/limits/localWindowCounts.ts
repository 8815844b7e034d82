/**
 * The request limit's counts when there is no Redis: per (organization, window) key,
 * what is left of the allowance, taken synchronously in this process.
 *
 * It keeps the bottleneck Group's semantics (a key starts with `requests` left, each
 * take removes one, the verdict is read from what is left, and a key is forgotten once
 * unused for `idleMs`) without bottleneck's local datastore, which answers
 * incrementReservoir only after a setTimeout(0): a timer turn (≥ 1 ms) and a queue of
 * promises on every request, measured by `npm run bench` (the README's Performance section).
 */
export interface LocalWindowCounts {
  /** Takes one from the key's allowance; returns what is left (negative: over the limit). */
  take(key: string, nowMs: number): number;
  clear(): void;
}

export function createLocalWindowCounts(requests: number, idleMs: number): LocalWindowCounts {
  const counts = new Map<string, { left: number; lastUsedMs: number }>();
  let nextSweepMs = 0;

  const sweep = (nowMs: number): void => {
    for (const [key, count] of counts) if (nowMs - count.lastUsedMs > idleMs) counts.delete(key);
  };

  return {
    take(key, nowMs) {
      // At most one sweep per idle period: the map holds a few keys per organization.
      if (nowMs >= nextSweepMs) {
        sweep(nowMs);
        nextSweepMs = nowMs + idleMs;
      }
      const count = counts.get(key);
      if (count === undefined) {
        counts.set(key, { left: requests - 1, lastUsedMs: nowMs });
        return requests - 1;
      }
      count.left -= 1;
      count.lastUsedMs = nowMs;
      return count.left;
    },
    clear() {
      counts.clear();
    },
  };
}
