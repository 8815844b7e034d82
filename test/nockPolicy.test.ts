import assert from 'node:assert/strict';
import { listen } from './support/http.js';
import { isLoopbackHost } from './support/nockPolicy.js';

describe('the network policy every test runs under', () => {
  it('counts only loopback hosts as loopback', () => {
    for (const host of [
      '127.0.0.1',
      '127.0.0.1:6380',
      '127.8.9.10:80',
      'localhost',
      'localhost:3000',
      '[::1]:8080',
      '::1',
    ]) {
      assert.equal(isLoopbackHost(host), true, host);
    }
    for (const host of [
      '10.0.0.1',
      '128.0.0.1:80',
      'example.com',
      'localhost.example.com',
      '127.0.0.1.nip.io',
      '[::2]:80',
      '1270.0.0.1',
    ]) {
      assert.equal(isLoopbackHost(host), false, host);
    }
  });

  it('refuses a real connection past loopback and lets loopback through', async () => {
    await assert.rejects(fetch('http://192.0.2.1/'), /Nock: Disallowed net connect/);
    const server = await listen({ callback: () => (_req, res) => res.end('here') });
    try {
      assert.equal(await (await fetch(server.url)).text(), 'here');
    } finally {
      await server.close();
    }
  });
});
