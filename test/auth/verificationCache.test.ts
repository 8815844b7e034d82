import assert from 'node:assert/strict';
import { createVerificationCache } from '../../src/auth/verificationCache.js';
import type { Verification } from '../../src/upstream/keyServiceContract.js';

function verificationOf(organizationId: string): Verification {
  return {
    key: {
      id: `key_${organizationId}`,
      organizationId,
      prefix: 'atl_00000000',
      permissions: ['read'],
      expiresAt: new Date('2027-01-01T00:00:00Z'),
      revokedAt: null,
    },
    organization: {
      id: organizationId,
      plan: 'pro',
      usage: { periodStart: new Date(0), periodEnd: new Date(0), used: 0, ceiling: null },
    },
  };
}

const answerOf = (organizationId: string) => ({
  verification: verificationOf(organizationId),
  acknowledgedBefore: 0,
});

describe('verificationCache', () => {
  let nowMs = 1_000_000;
  const cache = () =>
    createVerificationCache({ max: 2, ttlMs: 1000, unknownMax: 2, unknownTtlMs: 100, now: () => new Date(nowMs) });

  it('is bounded: the least recently used entry goes first', () => {
    const c = cache();
    c.remember('h1', answerOf('org_a'), c.generation());
    c.remember('h2', answerOf('org_a'), c.generation());
    c.get('h1');
    c.remember('h3', answerOf('org_a'), c.generation());
    assert.ok(c.get('h1'));
    assert.equal(c.get('h2'), undefined);
    assert.ok(c.get('h3'));
  });

  it('ignores an answer asked for before an invalidation', () => {
    const c = cache();
    const askedIn = c.generation();
    c.dropKey('other');
    c.remember('h1', answerOf('org_a'), askedIn);
    c.rememberUnknown('h2', askedIn);
    assert.equal(c.get('h1'), undefined);
    assert.equal(c.isUnknown('h2'), false);
  });

  it('drops by organization, leaving the others', () => {
    const c = cache();
    c.remember('h1', answerOf('org_a'), c.generation());
    c.remember('h2', answerOf('org_b'), c.generation());
    c.dropOrganization('org_a');
    assert.equal(c.get('h1'), undefined);
    assert.ok(c.get('h2'));
  });

  it('expires entries on the given clock', () => {
    const c = cache();
    nowMs = 1_000_000;
    c.remember('h1', answerOf('org_a'), c.generation());
    c.rememberUnknown('h2', c.generation());
    nowMs = 1_000_101;
    assert.equal(c.isUnknown('h2'), false);
    assert.ok(c.get('h1'));
    nowMs = 1_001_001;
    assert.equal(c.get('h1'), undefined);
  });
});
