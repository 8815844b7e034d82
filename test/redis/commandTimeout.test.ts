import assert from 'node:assert/strict';
import pino from 'pino';
import {
  closeRedis,
  connectRedis,
  REDIS_COMMAND_TIMEOUT_MS,
  type RedisConnection,
  withinCommandTimeout,
} from '../../src/redis/connectRedis.js';
import { type RedisServer, skipWithoutRedis, startRedisServer } from '../support/redisServer.js';

/** Keeps the event loop busy, as a long task or a starved process does. */
function busy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // nothing: the point is not to yield
  }
}

describe('the command timeout on the request path', () => {
  let redis: RedisServer;
  let connection: RedisConnection;

  before(async function () {
    skipWithoutRedis(this);
    redis = await startRedisServer();
    connection = connectRedis({ kind: 'server', url: redis.url }, pino({ level: 'silent' }));
    await new Promise((resolve) => connection.once('ready', resolve));
  });
  after(async () => {
    if (connection) closeRedis(connection);
    await redis?.stop();
  });

  it('takes a reply that arrived while the event loop was busy past the timeout, not a refusal', async () => {
    for (let attempt = 0; attempt < 3; attempt++) {
      const reply = withinCommandTimeout(() => connection.ping());
      // Auto-pipelining writes the command in setImmediate; then the loop stays busy while the reply arrives.
      await new Promise((resolve) => setImmediate(resolve));
      // Past the deadline and past twice it, as a starved process is: ioredis's own backstop, which refuses
      // before the socket is read, must be further still.
      busy(2 * REDIS_COMMAND_TIMEOUT_MS + 100);
      assert.equal(await reply, 'PONG');
    }
  });
});
