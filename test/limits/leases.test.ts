import assert from 'node:assert/strict';
import { leaseSize, renewsAhead } from '../../src/limits/leases.js';

describe('lease sizes', () => {
  it('takes 1/32 of what is left, at most 256, and nothing beyond the requests once fewer than 32 are left', () => {
    assert.equal(leaseSize(1_000_000), 256);
    assert.equal(leaseSize(600), 18);
    assert.equal(leaseSize(64), 2);
    assert.equal(leaseSize(31), 0);
    assert.equal(leaseSize(0), 0);
  });

  it('renews a lease of 8 or more once half of it is served, and never a smaller one', () => {
    assert.equal(renewsAhead(256, 129), false);
    assert.equal(renewsAhead(256, 128), true);
    assert.equal(renewsAhead(8, 4), true);
    assert.equal(renewsAhead(7, 0), false);
  });
});
