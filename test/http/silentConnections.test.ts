import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { SILENCE_GRACE_MS } from '../../src/http/createHttpServer.js';
import { eventually } from '../support/eventually.js';
import { type GatewayChild, startGatewayChild } from '../support/gatewayChild.js';

const ADDRESSES = 8;
const PER_ADDRESS = 250;

/**
 * Connections that never send a byte, 250 from each of 8 addresses (under the per-address cap
 * of 256; 2,000 in all, the default MAX_CONNECTIONS): Node counts them neither idle nor late
 * until its 10 s header deadline, so they held every slot and a client from a 9th address was
 * closed at once. Near the cap the oldest silent one is closed for each newcomer, as idle
 * keep-alive ones are; connections mid-request are kept.
 */
describe('silent connections near MAX_CONNECTIONS, against the gateway process', function () {
  this.timeout(60_000);
  let gateway: GatewayChild;
  const sockets: Socket[] = [];

  before(async () => {
    gateway = await startGatewayChild();
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await gateway.close();
  });

  const open = async (from: string): Promise<{ socket: Socket; closed: () => boolean }> => {
    const socket = connect({ port: gateway.port, host: '127.0.0.1', localAddress: from, allowHalfOpen: true });
    sockets.push(socket);
    let closed = false;
    socket.on('error', () => {});
    // A half-open client sees the gateway's close as the end of what it reads.
    socket.once('end', () => (closed = true));
    socket.once('close', () => (closed = true));
    await new Promise<void>((resolve) => {
      socket.once('connect', resolve);
      socket.once('close', resolve);
    });
    return { socket, closed: () => closed };
  };

  it('leaves a client from a 9th address served, and keeps connections mid-request', async () => {
    assert.equal(await gateway.paying(), 200);
    const midRequest = await Promise.all(Array.from({ length: 5 }, () => open('127.0.0.20')));
    for (const { socket } of midRequest)
      socket.write('GET /v1/api/keywords?site=example.com HTTP/1.1\r\nHost: gateway\r\n');
    const silent: Array<{ closed: () => boolean }> = [];
    for (let address = 0; address < ADDRESSES; address++) {
      const from = `127.0.0.${address + 2}`;
      silent.push(...(await Promise.all(Array.from({ length: PER_ADDRESS }, () => open(from)))));
    }
    assert.equal(silent.length, ADDRESSES * PER_ADDRESS);
    // Silent, not just connected: a request may arrive a moment after its handshake. The client from
    // elsewhere then comes on a connection of its own (127.0.0.1), well within the 10 s header deadline.
    await new Promise((resolve) => setTimeout(resolve, 2 * SILENCE_GRACE_MS));
    const statuses = [await gateway.paying(), await gateway.paying()];
    assert.deepEqual(statuses, [200, 200]);
    // One closed for each newcomer past 90 % of the cap: from the 1,801st connection on.
    const shed = () => silent.filter(({ closed }) => closed()).length;
    await eventually('a silent connection closed for each newcomer past 1,800', () => shed() >= 200, 10_000);
    assert.ok(shed() < silent.length / 2, `${shed()} closed: only as many as newcomers needed`);
    assert.deepEqual(
      midRequest.map(({ closed }) => closed()),
      Array(5).fill(false),
      'connections mid-request are kept',
    );
  });
});
