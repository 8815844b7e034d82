/** A clock a test moves by hand: `now` for the code under test, `advance` for the test. */
export interface MutableClock {
  now(): Date;
  set(date: Date | string): void;
  advance(ms: number): void;
}

export function mutableClock(start: Date | string): MutableClock {
  let current = new Date(start).getTime();
  return {
    now: () => new Date(current),
    set: (date) => {
      current = new Date(date).getTime();
    },
    advance: (ms) => {
      current += ms;
    },
  };
}
