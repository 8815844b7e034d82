import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';
import { testKey, verifyAnswer } from '../support/keys.js';

const ROUNDS = 24;
/** Generous against a loaded machine's noise; the key service's 40 ms would show far beyond it. */
const TOLERANCE_MS = 15;

/**
 * A revoked key is known to the gateway's cache, a never-issued one costs a key-service call:
 * if the refusal delay were counted from the end of the checks, the work would show through
 * and tell the two apart. Refusals leave a fixed time after the request arrived, so revoked,
 * expired and never-issued keys are answered alike: compared by median over many rounds, each
 * round asking the three at once so they share the machine's load.
 */
describe('refusals of revoked, expired and unknown keys, against the gateway process', function () {
  this.timeout(120_000);
  let gateway: GatewayChild;
  const dispatcher = new Agent({ connections: 16 });
  const revoked = testKey('timing revoked');
  const expired = testKey('timing expired');

  before(async () => {
    // Every round spends the failed-key budget twice (revoked and unknown keys alike): room for all.
    gateway = await startGatewayChild({ UNKNOWN_KEYS_PER_MINUTE: '1000' });
    gateway.keyService.setVerifyDelay(40);
    gateway.keyService.setAnswer(revoked, verifyAnswer(revoked));
    gateway.keyService.revoke(revoked);
    gateway.keyService.setAnswer(expired, verifyAnswer(expired, { key: { expiresAt: '2026-01-01T00:00:00.000Z' } }));
  });
  after(async () => {
    await dispatcher.close();
    await gateway.close();
  });

  const timed = async (key: string) => {
    const started = performance.now();
    const res = await request(`${gateway.url}/v1/api/keywords?site=example.com`, {
      headers: { authorization: `Bearer ${key}` },
      dispatcher,
    });
    const body = (await res.body.json()) as { errors: Array<{ reason?: string }> };
    return { ms: performance.now() - started, status: res.statusCode, reason: body.errors[0]?.reason };
  };
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

  it('answers the three after the same delay, within the noise of the machine', async () => {
    // Each key verified once: the revoked and expired ones are cached from now on, as an attacker would find them.
    await Promise.all([timed(revoked), timed(expired)]);
    const samples = { revoked: [] as number[], expired: [] as number[], unknown: [] as number[] };
    const reasons = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const [a, b, c] = await Promise.all([timed(revoked), timed(expired), timed(testKey(`never issued ${round}`))]);
      for (const answer of [a, b, c]) {
        assert.equal(answer.status, 401);
        reasons.add(answer.reason ?? 'none');
      }
      samples.revoked.push(a.ms);
      samples.expired.push(b.ms);
      samples.unknown.push(c.ms);
    }
    assert.deepEqual([...reasons].sort(), ['expired_key', 'invalid_key']);
    const medians = Object.fromEntries(Object.entries(samples).map(([kind, values]) => [kind, median(values)]));
    const spread = Math.max(...Object.values(medians)) - Math.min(...Object.values(medians));
    assert.ok(spread < TOLERANCE_MS, `medians ${JSON.stringify(medians)}`);
    for (const ms of Object.values(medians)) assert.ok(ms >= 495, `a refusal answered before its delay: ${ms} ms`);
  });
});
