import assert from 'node:assert/strict';
import { appendRun, type EpochRun, removeOne, takeFront, UNKNOWN_EPOCH } from '../../src/usage/epochRuns.js';

describe('epoch runs (which count each call was admitted under)', () => {
  it('merges calls of one epoch and keeps the order of epochs', () => {
    const runs: EpochRun[] = [];
    appendRun(runs, 'a', 2);
    appendRun(runs, 'a', 1);
    appendRun(runs, 'b', 4);
    appendRun(runs, 'b', 0);
    assert.deepEqual(runs, [
      { epoch: 'a', calls: 3 },
      { epoch: 'b', calls: 4 },
    ]);
  });

  it('takes a batch from the front, across epochs, and names what it does not know', () => {
    const runs: EpochRun[] = [
      { epoch: 'a', calls: 3 },
      { epoch: 'b', calls: 4 },
    ];
    assert.deepEqual(takeFront(runs, 5), [
      { epoch: 'a', calls: 3 },
      { epoch: 'b', calls: 2 },
    ]);
    assert.deepEqual(takeFront(runs, 4), [
      { epoch: 'b', calls: 2 },
      { epoch: UNKNOWN_EPOCH, calls: 2 },
    ]);
    assert.deepEqual(runs, []);
  });

  it('removes a released call from the newest run of its epoch', () => {
    const runs: EpochRun[] = [
      { epoch: 'a', calls: 1 },
      { epoch: 'b', calls: 1 },
      { epoch: 'a', calls: 2 },
    ];
    removeOne(runs, 'a');
    removeOne(runs, 'b');
    removeOne(runs, 'c');
    assert.deepEqual(runs, [
      { epoch: 'a', calls: 1 },
      { epoch: 'a', calls: 1 },
    ]);
  });
});
