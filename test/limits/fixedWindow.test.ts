import assert from 'node:assert/strict';
import { fixedWindowAt } from '../../src/limits/fixedWindow.js';

describe('fixedWindowAt', () => {
  it('places a moment in its epoch-aligned window and counts the seconds to its end', () => {
    assert.deepEqual(fixedWindowAt(120_000, 60_000), { index: 2, resetSeconds: 60 });
    assert.deepEqual(fixedWindowAt(120_001, 60_000), { index: 2, resetSeconds: 60 });
    assert.deepEqual(fixedWindowAt(179_000, 60_000), { index: 2, resetSeconds: 1 });
    assert.deepEqual(fixedWindowAt(179_999, 60_000), { index: 2, resetSeconds: 1 });
    assert.deepEqual(fixedWindowAt(180_000, 60_000), { index: 3, resetSeconds: 60 });
  });
});
