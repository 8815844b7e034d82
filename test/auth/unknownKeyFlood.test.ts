import assert from 'node:assert/strict';
import { Agent, request } from 'undici';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';
import { testKey } from '../support/keys.js';

/**
 * 150 never-issued keys at once from one address against the gateway process, the key
 * service answering in 50 ms: the failed-key budget (30 a minute) is reserved before each
 * key-service call, so at most 30 calls are made and every other caller gets 429 with the
 * budget's reason, not a 503 from lanes full of one caller's junk.
 */
describe('unknown keys at once from one address, against the gateway process', function () {
  this.timeout(60_000);
  let gateway: GatewayChild;
  const dispatcher = new Agent({ connections: 200 });

  before(async () => {
    // Each refusal closes its connection, and 300 of them from one address may linger a moment:
    // the per-client connection cap is another test's subject.
    gateway = await startGatewayChild({ MAX_CONNECTIONS_PER_CLIENT: '1000' });
    gateway.keyService.setVerifyDelay(50);
  });
  after(async () => {
    await dispatcher.close();
    await gateway.close();
  });

  const present = async (key: string) => {
    const res = await request(`${gateway.url}/v1/api/keywords?site=example.com`, {
      headers: { authorization: `Bearer ${key}` },
      dispatcher,
    });
    const body = (await res.body.json()) as { errors: Array<{ reason?: string }> };
    return { status: res.statusCode, reason: body.errors[0]?.reason, retryAfter: res.headers['retry-after'] };
  };

  it('makes at most 30 key-service calls a minute and answers the rest 429 unknown_key_budget_spent', async () => {
    // The paying caller, from the same address, has been served before: its key is known here.
    assert.equal(await gateway.paying(), 200);
    const callsBefore = gateway.keyService.verifyCalls();
    const answers: Array<Awaited<ReturnType<typeof present>>> = [];
    for (let round = 0; round < 2; round++) {
      answers.push(
        ...(await Promise.all(Array.from({ length: 150 }, (_, i) => present(testKey(`junk ${round} ${i}`))))),
      );
    }
    const calls = gateway.keyService.verifyCalls() - callsBefore;
    const count = (status: number) => answers.filter((answer) => answer.status === status).length;
    assert.ok(calls <= 30, `${calls} key-service calls`);
    assert.equal(count(401), calls, 'each call was an unknown key answered 401');
    assert.equal(count(429), 300 - calls);
    assert.equal(count(503), 0, 'no 503: the key service was fine');
    for (const answer of answers.filter((one) => one.status === 429)) {
      assert.equal(answer.reason, 'unknown_key_budget_spent');
      assert.ok(Number(answer.retryAfter) >= 1);
    }
    // It is served still: a key seen to succeed never meets the budget.
    assert.equal(await gateway.paying(), 200);
  });
});
