import Mocha, { type Context, type RootHookObject } from 'mocha';
import nock from 'nock';
import { routeUpstreamCalls } from '../../src/upstream/upstreamHttp.js';
import { NockDispatcher } from './nockDispatcher.js';

/**
 * The mocha root hooks for every test file: no test reaches past loopback, and an
 * interceptor a test set up but never used fails that test (it promised a call that
 * was never made), then nothing a test set up leaks into the next.
 */

/** Loopback only: 127.0.0.0/8, ::1 and localhost, each with or without a port. */
export function isLoopbackHost(host: string): boolean {
  const bareIpv6 = !host.startsWith('[') && host.indexOf(':') !== host.lastIndexOf(':');
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : bareIpv6 ? host : host.replace(/:\d+$/, '');
  return name === 'localhost' || name === '::1' || /^127(\.\d{1,3}){3}$/.test(name);
}

// Before any test file runs: upstream calls to made-up hosts reach nock (see NockDispatcher).
routeUpstreamCalls((own) => new NockDispatcher(own));

export const mochaHooks: RootHookObject = {
  beforeEach() {
    nock.disableNetConnect();
    nock.enableNetConnect(isLoopbackHost);
  },
  afterEach(this: Context) {
    const unused = nock.pendingMocks();
    nock.cleanAll();
    if (unused.length === 0 || this.currentTest?.state === 'failed') return;
    const err = new Error(`interceptors set up but never called:\n${unused.join('\n')}`);
    // Handed to the hook's error() so that mocha fails this test and goes on with the next
    // (a root hook that throws would stop the whole run).
    if (this.test instanceof Mocha.Hook) this.test.error(err);
    else throw err;
  },
};
