import { readFileSync } from 'node:fs';

/**
 * Loaded with `--import` into a gateway process a test starts: the process's clock (Date) runs ahead of the
 * machine's by the milliseconds written in the file TEST_CLOCK_SHIFT_FILE names, read at start and again at
 * each SIGUSR2. A test moves every instance of a fleet to the start of a window at once, rather than waiting
 * for one; timers still run on real time.
 */
const file = process.env.TEST_CLOCK_SHIFT_FILE;
let shift = 0;
const readShift = (): void => {
  if (file === undefined) return;
  try {
    shift = Number(readFileSync(file, 'utf8')) || 0;
  } catch {
    shift = 0;
  }
};
readShift();
process.on('SIGUSR2', readShift);

const RealDate = Date;
class ShiftedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(RealDate.now() + shift);
    else super(...(args as [number]));
  }
  static override now(): number {
    return RealDate.now() + shift;
  }
}
globalThis.Date = ShiftedDate as DateConstructor;
