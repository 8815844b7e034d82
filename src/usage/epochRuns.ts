/**
 * Which incarnation of the shared count (its epoch) each call of an organization was
 * admitted under, in admission order, as runs: [{ epoch, calls }, …]. The usage buffer
 * sends calls in the order it records them and names only the organization and how many,
 * so the calls a batch carries are taken from the front. A call admitted under an earlier
 * incarnation (the period before) must not count as acknowledged in the next one: it is
 * not in that count's `admitted`.
 */
export interface EpochRun {
  readonly epoch: string;
  calls: number;
}

/** Calls the runs do not account for (admitted by another instance, or before a restart). */
export const UNKNOWN_EPOCH = '*';

/** Adds `calls` admitted under `epoch` at the back. */
export function appendRun(runs: EpochRun[], epoch: string, calls: number): void {
  if (calls <= 0) return;
  const last = runs[runs.length - 1];
  if (last && last.epoch === epoch) last.calls += calls;
  else runs.push({ epoch, calls });
}

/** Removes one call of `epoch` (the newest): a released call is never sent. */
export function removeOne(runs: EpochRun[], epoch: string): void {
  for (let i = runs.length - 1; i >= 0; i--) {
    const run = runs[i];
    if (!run || run.epoch !== epoch) continue;
    run.calls -= 1;
    if (run.calls === 0) runs.splice(i, 1);
    return;
  }
}

/** Takes `calls` from the front, as runs; what the runs do not hold comes back under UNKNOWN_EPOCH. */
export function takeFront(runs: EpochRun[], calls: number): EpochRun[] {
  const taken: EpochRun[] = [];
  let left = calls;
  while (left > 0) {
    const first = runs[0];
    if (!first) {
      appendRun(taken, UNKNOWN_EPOCH, left);
      break;
    }
    const n = Math.min(left, first.calls);
    appendRun(taken, first.epoch, n);
    first.calls -= n;
    if (first.calls === 0) runs.shift();
    left -= n;
  }
  return taken;
}
