import assert from 'node:assert/strict';
import { createLocalWindowCounts } from '../../src/limits/localWindowCounts.js';

describe('local window counts (the limiter without Redis)', () => {
  it('takes one per call from each key’s own allowance and reports what is left', () => {
    const counts = createLocalWindowCounts(3, 70_000);
    assert.deepEqual([1, 2, 3, 4].map(() => counts.take('org_a:100', 0)), [2, 1, 0, -1]);
    assert.equal(counts.take('org_b:100', 0), 2);
    assert.equal(counts.take('org_a:101', 0), 2);
  });

  it('forgets a key left unused for longer than the idle time, and keeps one still in use', () => {
    const counts = createLocalWindowCounts(3, 70_000);
    counts.take('org_a:100', 0);
    counts.take('org_b:100', 0);
    assert.equal(counts.take('org_b:100', 60_000), 1);
    assert.equal(counts.take('org_a:100', 70_001), 2);
    assert.equal(counts.take('org_b:100', 70_001), 0);
  });

  it('starts every key afresh after clear()', () => {
    const counts = createLocalWindowCounts(2, 70_000);
    counts.take('org_a:100', 0);
    counts.clear();
    assert.equal(counts.take('org_a:100', 0), 1);
  });
});
