import assert from 'node:assert/strict';
import Bottleneck from 'bottleneck';
import { pino } from 'pino';
import { connectRedisStore, type RedisStore } from '../../src/limits/redisStore.js';
import { skipWithoutRedis, startRedisServer, type RedisServer } from '../support/redisServer.js';

describe('redis store for the request limit', function () {
  let redis: RedisServer;
  let store: RedisStore | null = null;

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
  });
  after(async () => {
    await redis?.stop();
  });
  afterEach(async () => {
    await store?.close();
    store = null;
  });

  it('survives a limiter being removed while its subscriber connection is down', async () => {
    store = connectRedisStore(redis.url, pino({ level: 'silent' }));
    const limiter = new Bottleneck({ id: 'store-test', datastore: 'ioredis', connection: store.connection, reservoir: 1 });
    await limiter.ready();
    const { subscriber } = limiter.clients() as { subscriber: { status: string } };
    assert.equal(await redis.command('CLIENT', 'KILL', 'TYPE', 'pubsub'), ':1');
    const deadline = Date.now() + 2000;
    while (subscriber.status === 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    assert.notEqual(subscriber.status, 'ready');
    // bottleneck unsubscribes inside an async forEach callback: a failure there would
    // be an unhandled rejection, which ends a Node process.
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      await limiter.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
    assert.deepEqual(unhandled, []);
    assert.equal(store.usable(), true, 'the command connection was not touched');
  });
});
