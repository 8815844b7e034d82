import assert from 'node:assert/strict';
import { retryDelayMs } from '../../src/upstream/backoff.js';

describe('retryDelayMs', () => {
  const base = { baseMs: 100, maxMs: 1000 };

  it('doubles per attempt, jittered within the upper half, and stops at the cap', () => {
    const low = (attempt: number) => retryDelayMs(attempt, { ...base, random: () => 0 });
    const high = (attempt: number) => retryDelayMs(attempt, { ...base, random: () => 1 });
    assert.deepEqual([1, 2, 3, 4, 5, 6].map(low), [50, 100, 200, 400, 500, 500]);
    assert.deepEqual([1, 2, 3, 4, 5, 6].map(high), [100, 200, 400, 800, 1000, 1000]);
  });

  it("honours the upstream's Retry-After up to the cap", () => {
    assert.equal(retryDelayMs(1, { ...base, random: () => 0, retryAfterSeconds: 0.3 }), 300);
    assert.equal(retryDelayMs(1, { ...base, random: () => 0, retryAfterSeconds: 60 }), 1000);
  });
});
