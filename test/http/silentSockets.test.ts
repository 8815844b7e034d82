import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';

/**
 * Sockets that send a request line and one header, then stay silent without closing: the
 * gateway answers 408 once its header deadline passes and must then free the slot, or ten
 * of them hold MAX_CONNECTIONS=10 for as long as the attacker likes.
 */
describe('silent sockets against the gateway process', function () {
  this.timeout(60_000);
  let gateway: GatewayChild;
  const sockets: Socket[] = [];

  before(async () => {
    gateway = await startGatewayChild({ MAX_CONNECTIONS: '10', MAX_CONNECTIONS_PER_CLIENT: '10' });
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await gateway.close();
  });

  it('answers each 408 and closes it, so a paying request at +13 s is answered 200', async () => {
    const answers: string[] = [];
    const ended: boolean[] = [];
    const started = Date.now();
    await Promise.all(
      Array.from({ length: 10 }, (_, index) => {
        // The attacker never ends its side (half-open allowed): only the gateway can close these.
        const socket = connect({ port: gateway.port, host: '127.0.0.1', allowHalfOpen: true });
        sockets.push(socket);
        answers[index] = '';
        ended[index] = false;
        socket.on('data', (chunk: Buffer) => (answers[index] += chunk.toString('latin1')));
        socket.on('error', () => {});
        socket.on('end', () => (ended[index] = true));
        return new Promise<void>((resolve) =>
          socket.once('connect', () => {
            socket.write('GET /v1/api/keywords?site=example.com HTTP/1.1\r\nHost: gateway\r\n');
            resolve();
          }),
        );
      }),
    );
    // Every slot is held now: a newcomer is turned away.
    assert.equal(await gateway.paying(), 0);

    await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + 13_000 - Date.now())));
    // Only a destroyed socket gives its slot back: an ended (half-closed) one still counts.
    assert.equal(await gateway.paying(), 200);
    assert.deepEqual(
      answers.map((answer) => answer.split('\r\n')[0]),
      Array(10).fill('HTTP/1.1 408 Request Timeout'),
    );
    assert.deepEqual(ended, Array(10).fill(true), 'the gateway ended every silent socket after its answer');
  });
});
