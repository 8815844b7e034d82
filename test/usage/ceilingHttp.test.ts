import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import {
  answerEveryPlatformCall,
  countOf,
  type MeteredGateway,
  startMeteredGateway,
  statusesOf,
} from '../support/meteredGateway.js';

/**
 * The usage ceiling on one instance, over real HTTP: a key service whose `used` moves as
 * it accepts usage events, and clients asking at once or in a steady stream. Exactly the
 * headroom is served, every other request is 403 usage_ceiling_reached.
 */

const KEY = testKey('ceiling over http');
const CEILING = 1000;

describe('usage ceiling over HTTP', () => {
  let keyService: FakeKeyService;
  let gateways: MeteredGateway[];

  beforeEach(async () => {
    answerEveryPlatformCall();
    keyService = await startFakeKeyService();
    gateways = [];
  });
  afterEach(async () => {
    await Promise.all(gateways.map((gateway) => gateway.close()));
    await keyService.close();
  });

  async function startInstances(instances: number, flushIntervalMs?: number): Promise<MeteredGateway[]> {
    const options = flushIntervalMs === undefined ? {} : { flushIntervalMs };
    gateways = await Promise.all(Array.from({ length: instances }, () => startMeteredGateway(keyService, options)));
    await eventually('every instance following the event stream', () => keyService.openStreams() === instances);
    return gateways;
  }

  describe('one instance', () => {
    async function servedWithHeadroom(headroom: number, total: number, concurrency: number): Promise<number[]> {
      keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { used: CEILING - headroom, ceiling: CEILING } }));
      const [gateway] = await startInstances(1);
      assert.ok(gateway);
      const statuses = await statusesOf(gateway.url, KEY, total, concurrency);
      // Everything served is counted by the key service, once.
      await eventually('usage delivered', () => gateway.usage.pendingTotal() === 0);
      assert.equal(keyService.usageEvents.length, countOf(statuses, 200));
      return statuses;
    }

    for (const concurrency of [1, 50, 200]) {
      it(`serves exactly the headroom to ${concurrency} concurrent client(s)`, async () => {
        const headroom = concurrency === 1 ? 7 : 40;
        const total = concurrency === 1 ? 12 : concurrency * 2;
        const statuses = await servedWithHeadroom(headroom, total, concurrency);
        assert.equal(countOf(statuses, 200), headroom);
        assert.equal(countOf(statuses, 403), total - headroom);
      });
    }

    it('serves exactly a headroom of 1 to 200 requests at once', async () => {
      const statuses = await servedWithHeadroom(1, 200, 200);
      assert.equal(countOf(statuses, 200), 1);
      assert.equal(countOf(statuses, 403), 199);
    });

    it('serves exactly the headroom to a steady stream while usage is flushed and verified again all along', async () => {
      // Headroom past the near-ceiling margin: the first calls come from the cache, the last ones verify each time.
      const statuses = await servedWithHeadroom(300, 420, 4);
      assert.equal(countOf(statuses, 200), 300);
      assert.equal(countOf(statuses, 403), 120);
    });

    it('gives back the place of a call that fails', async () => {
      keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { used: CEILING - 3, ceiling: CEILING } }));
      const [gateway] = await startInstances(1);
      assert.ok(gateway);
      const missing = await fetch(`${gateway.url}/v1/api/keywords`, { headers: { authorization: `Bearer ${KEY}` } });
      assert.equal(missing.status, 400); // no site: refused, not counted
      await missing.arrayBuffer();
      const statuses = await statusesOf(gateway.url, KEY, 10, 10);
      assert.equal(countOf(statuses, 200), 3);
      assert.equal(countOf(statuses, 403), 7);
    });
  });

  describe('instances without Redis', () => {
    for (const [instances, clientsPerInstance] of [
      [2, 4],
      [3, 8],
    ] as const) {
      it(`${instances} instances with ${clientsPerInstance} clients each: none under, over by at most what the others have in flight`, async () => {
        const headroom = 100;
        keyService.setAnswer(KEY, verifyAnswer(KEY, { usage: { used: CEILING - headroom, ceiling: CEILING } }));
        await startInstances(instances, 1000);
        const statuses = (
          await Promise.all(gateways.map((gateway) => statusesOf(gateway.url, KEY, 150, clientsPerInstance)))
        ).flat();
        await eventually('usage delivered', () => gateways.every((gateway) => gateway.usage.pendingTotal() === 0));
        const served = countOf(statuses, 200);
        assert.equal(keyService.usageEvents.length, served);
        assert.ok(served >= headroom, `served ${served} of ${headroom}`);
        // The README's bound: near the ceiling each call is sent at once, so what an instance cannot
        // see is the others' calls in flight or on their way to the key service, one or two per client.
        const bound = (instances - 1) * clientsPerInstance * 2;
        assert.ok(
          served - headroom <= bound,
          `served ${served}: ${served - headroom} over the ceiling, bound ${bound}`,
        );
      });
    }
  });
});
