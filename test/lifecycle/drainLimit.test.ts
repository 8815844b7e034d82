import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { answerDraining } from '../../src/http/createHttpServer.js';
import { installShutdown } from '../../src/lifecycle/shutdown.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { FIXED_NOW, fakeServices, recordingUsage } from '../support/fakeServices.js';
import { keywordsData, stubPlatform } from '../support/platformAnswers.js';

/** Requests running at once when the shutdown starts. */
const CALLERS = 50;

describe('requests still running when a shutdown reaches its drain limit', () => {
  it('each gets a 503 envelope with Retry-After and one log line, none is counted when its platform call ends, no failure is logged', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    let stalled = false;
    let answerPlatform: () => void = () => undefined;
    const platformAnswered = new Promise<void>((resolve) => (answerPlatform = resolve));
    const usage = recordingUsage();
    const platform = stubPlatform(async () => {
      if (stalled) await platformAnswered;
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
      const ask = (requestId: string) =>
        fetch(`http://127.0.0.1:${port}/v1/api/keywords?site=acme.com`, {
          headers: { authorization: 'Bearer key-org-a', 'x-request-id': requestId },
        });
      // One call answered before the shutdown: served and counted as ever.
      assert.equal((await ask('drain-before')).status, 200);
      stalled = true;
      const asked = Array.from({ length: CALLERS }, (_, n) => ask(`drain-${n}`));
      while (platform.calls.length < CALLERS + 1) await new Promise((resolve) => setTimeout(resolve, 5));
      assert.equal(await handle.shutdown('SIGTERM'), 0);

      const answers = await Promise.all(asked);
      for (const [n, res] of answers.entries()) {
        const requestId = `drain-${n}`;
        assert.equal(res.status, 503, requestId);
        assert.equal(res.headers.get('retry-after'), '1');
        assert.equal(res.headers.get('connection'), 'close');
        assert.equal(res.headers.get('x-request-id'), requestId);
        assert.equal(res.headers.get('ratelimit'), null, 'no header of the answer that was not sent');
        const body = (await res.json()) as {
          data: unknown;
          meta: { requestId: string };
          errors: Array<{ code: string }>;
        };
        assert.equal(body.data, null);
        assert.equal(body.meta.requestId, requestId);
        assert.equal(body.errors[0]?.code, 'SERVICE_UNAVAILABLE');
        // Its line is written with the 503, not when the handler ends: the process may be gone by then.
        const requestLines = lines.filter((line) => line.msg === 'request' && line.requestId === requestId);
        assert.deepEqual(
          requestLines.map((line) => line.status),
          [503],
          requestId,
        );
      }

      // The platform answers after all: nothing reaches the callers, nothing more is counted.
      answerPlatform();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(usage.events.length, 1, 'only the call answered before the shutdown');
      assert.deepEqual(
        lines.filter((line) => line.msg === 'request failed'),
        [],
      );
      assert.equal(
        lines.filter((line) => line.msg === 'request').length,
        CALLERS + 1,
        'one line each, not another when the handlers end',
      );
      assert.deepEqual(exits, [0]);
    } finally {
      handle.uninstall();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a drain 503 gives back its unit of the request limit, and the handler finishing 200 afterwards takes nothing', async () => {
    const limit = 30;
    const callers = 10;
    const admission = createLocalAdmission({ requests: limit, windowSeconds: 60 });
    const usage = recordingUsage();
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    const platform = stubPlatform(async () => {
      await released;
      return keywordsData();
    });
    const server = createServer(createApp(fakeServices({ usage, platform, admission })).callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const handle = installShutdown({
      server,
      closers: [],
      logger: pino({ level: 'silent' }),
      deadlineMs: 8000,
      drainMs: 100,
      signals: [],
      exit: () => undefined,
      answerUnfinished: answerDraining,
    });
    try {
      const { port } = server.address() as AddressInfo;
      const asked = Array.from({ length: callers }, () =>
        fetch(`http://127.0.0.1:${port}/v1/api/keywords?site=acme.com`, {
          headers: { authorization: 'Bearer key-org-a' },
        }),
      );
      while (platform.calls.length < callers) await new Promise((resolve) => setTimeout(resolve, 5));
      await handle.shutdown('SIGTERM');
      const statuses = await Promise.all(asked.map(async (answer) => (await answer).status));
      assert.deepEqual(new Set(statuses), new Set([503]));
      // The handlers finish 200 after their answers went out as 503s.
      release();
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.equal(usage.events.length, 0);
      const next = await admission.take('org_a', FIXED_NOW.getTime());
      assert.equal(next.remaining, limit - 1, 'every unit given back: only this take is spent');
    } finally {
      handle.uninstall();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await admission.close();
    }
  });
});
