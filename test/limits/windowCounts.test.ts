import assert from 'node:assert/strict';
import { createWindowCounts } from '../../src/limits/windowCounts.js';

describe('window counts', () => {
  it('counts per organization in the latest window and forgets older windows', () => {
    const counts = createWindowCounts();
    assert.equal(counts.add('org_a', 7), 1);
    assert.equal(counts.add('org_a', 7), 2);
    assert.equal(counts.add('org_b', 7), 1);
    assert.equal(counts.get('org_a', 7), 2);
    assert.equal(counts.add('org_a', 8), 1);
    assert.equal(counts.get('org_a', 7), 0);
    assert.equal(counts.get('org_b', 8), 0);
    assert.deepEqual([...counts.latest().counts], [['org_a', 1]]);
    assert.equal(counts.latest().windowIndex, 8);
  });

  it('counts a moment from an earlier window (a clock stepped back) in the latest one, never fewer', () => {
    const counts = createWindowCounts();
    counts.add('org_a', 8);
    assert.equal(counts.add('org_a', 7), 2);
    assert.equal(counts.get('org_a', 8), 2);
  });
});
