import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { answerDraining } from '../../src/http/createHttpServer.js';
import { installShutdown } from '../../src/lifecycle/shutdown.js';
import { fakeServices, recordingUsage } from '../support/fakeServices.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

describe('a request still running when a shutdown reaches its drain limit', () => {
  it('gets a 503 envelope with Retry-After, is not counted when its platform call ends, and logs no failure', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let answerPlatform: () => void = () => undefined;
    const platformAnswered = new Promise<void>((resolve) => (answerPlatform = resolve));
    let platformCalled: () => void = () => undefined;
    const calledPlatform = new Promise<void>((resolve) => (platformCalled = resolve));
    const usage = recordingUsage();
    const platform = stubPlatform(async () => {
      platformCalled();
      await platformAnswered;
      return keywordsData();
    });
    const server = createServer(createApp(fakeServices({ logger, usage, platform })).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const exits: number[] = [];
    const handle = installShutdown({
      server,
      closers: [],
      logger,
      deadlineMs: 8000,
      drainMs: 100,
      signals: [],
      exit: (code) => exits.push(code),
      answerUnfinished: answerDraining,
    });
    try {
      const { port } = server.address() as AddressInfo;
      const asked = fetch(`http://127.0.0.1:${port}/v1/api/keywords?site=acme.com`, {
        headers: { authorization: 'Bearer key-org-a', 'x-request-id': 'drain-1' },
      });
      await calledPlatform;
      assert.equal(await handle.shutdown('SIGTERM'), 0);

      const res = await asked;
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '1');
      assert.equal(res.headers.get('connection'), 'close');
      assert.equal(res.headers.get('x-request-id'), 'drain-1');
      assert.equal(res.headers.get('ratelimit'), null, 'no header of the answer that was not sent');
      const body = (await res.json()) as {
        data: unknown;
        meta: { requestId: string };
        errors: Array<{ code: string }>;
      };
      assert.equal(body.data, null);
      assert.equal(body.meta.requestId, 'drain-1');
      assert.equal(body.errors[0]?.code, 'SERVICE_UNAVAILABLE');
      // Its line is written with the 503, not when the handler ends: the process may be gone by then.
      const requestLine = lines.find((line) => line.msg === 'request' && line.requestId === 'drain-1');
      assert.equal(requestLine?.status, 503);

      // The platform answers after all: nothing reaches the caller, nothing is counted.
      answerPlatform();
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(usage.events, []);
      assert.deepEqual(
        lines.filter((line) => line.msg === 'request failed'),
        [],
      );
      assert.equal(
        lines.filter((line) => line.msg === 'request').length,
        1,
        'one line, not another when the handler ends',
      );
    } finally {
      handle.uninstall();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
