import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import { DeadlineError } from '../../src/upstream/deadline.js';
import { AnswerTooLargeError, createUpstreamHttp } from '../../src/upstream/upstreamHttp.js';
import { countingServer, trickle } from '../support/countingServer.js';
import { listen } from '../support/http.js';

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void;

const POST = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' } as const;

/** Small enough that the tests of the bound send a few times it. */
const MAX_ANSWER_BYTES = 1024 * 1024;
const limits = (timeoutMs: number, more: Record<string, number> = {}) => ({
  timeoutMs,
  connections: 64,
  maxAnswerBytes: MAX_ANSWER_BYTES,
  ...more,
});

describe('upstream HTTP (undici)', () => {
  let handler: Handler;
  let server: Awaited<ReturnType<typeof listen>>;
  const sockets = new Set<Socket>();
  const http = createUpstreamHttp(limits(5000));

  before(async () => {
    server = await listen({
      callback: () => (req: IncomingMessage, res: ServerResponse) => {
        sockets.add(req.socket);
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => handler(req, Buffer.concat(chunks).toString('utf8'), res));
      },
    });
  });
  after(() => server.close());

  it('sends the method, headers and body, and returns status, headers and body', async () => {
    let seen: { method?: string; authorization?: string; encoding?: string; body?: string } = {};
    handler = (req, body, res) => {
      seen = {
        method: req.method,
        authorization: req.headers.authorization,
        encoding: req.headers['accept-encoding'],
        body,
      };
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
      res.end('{"errors":[{"message":"slow down"}]}');
    };
    const answer = await http.send(`${server.url}/graphql`, {
      method: 'POST',
      headers: { authorization: 'Bearer token-1' },
      body: '{"query":"{ __typename }"}',
    });
    assert.deepEqual(seen, {
      method: 'POST',
      authorization: 'Bearer token-1',
      encoding: 'gzip, deflate, br',
      body: '{"query":"{ __typename }"}',
    });
    assert.equal(answer.status, 429);
    assert.equal(answer.headers['retry-after'], '7');
    assert.equal(answer.text, '{"errors":[{"message":"slow down"}]}');
  });

  it("never goes through the process-global dispatcher (on Node 22 that is Node's own undici)", async () => {
    class Refusing extends Dispatcher {
      calls = 0;
      override dispatch(): boolean {
        this.calls += 1;
        throw new Error('the global dispatcher was used');
      }
    }
    const refusing = new Refusing();
    const previous = getGlobalDispatcher();
    setGlobalDispatcher(refusing);
    try {
      handler = (_req, _body, res) => res.end('ok');
      const answer = await http.send(`${server.url}/graphql`, POST);
      const stream = await http.open(`${server.url}/events`, {}, new AbortController().signal);
      await stream.body.text();
      assert.deepEqual([answer.status, answer.text, stream.statusCode, refusing.calls], [200, 'ok', 200, 0]);
    } finally {
      setGlobalDispatcher(previous);
    }
  });

  for (const [encoding, encode] of [
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const) {
    it(`decodes a ${encoding} answer`, async () => {
      const text = `{"data":{"text":"${'é'.repeat(40_000)}"}}`; // several chunks, a multi-byte character across them
      handler = (_req, _body, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': encoding });
        res.end(encode(text));
      };
      const answer = await http.send(`${server.url}/graphql`, POST);
      assert.equal(answer.text, text);
    });
  }

  it('rejects a compressed answer that does not decode', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end('not gzip at all');
    };
    await assert.rejects(
      http.send(`${server.url}/graphql`, POST),
      (err: unknown) => err instanceof Error && !(err instanceof DeadlineError),
    );
  });

  it('rejects an answer whose connection drops before the body ends', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":', () => res.destroy());
    };
    await assert.rejects(http.send(`${server.url}/graphql`, POST), (err: unknown) => {
      assert.ok(err instanceof Error && !(err instanceof DeadlineError), String(err));
      return true;
    });
  });

  it('refuses an answer larger than MAX_ANSWER_BYTES, on the wire or once decoded, without holding it all', async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      // Written until the client gives up (the socket closes) or well past the limit.
      let sent = 0;
      const more = () => {
        while (sent <= MAX_ANSWER_BYTES + chunk.length && !res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', more);
        }
        res.end();
      };
      more();
    };
    await assert.rejects(http.send(`${server.url}/graphql`, POST), AnswerTooLargeError);

    const bomb = gzipSync(Buffer.alloc(MAX_ANSWER_BYTES + 1, 0x20)); // a small fraction of that on the wire
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
      res.end(bomb);
    };
    await assert.rejects(http.send(`${server.url}/graphql`, POST), (err: unknown) => err instanceof RangeError);
  });

  it('reports a redirect as it is instead of following it', async () => {
    let calls = 0;
    handler = (_req, _body, res) => {
      calls += 1;
      res.writeHead(307, { location: '/elsewhere' });
      res.end();
    };
    assert.equal((await http.send(`${server.url}/graphql`, POST)).status, 307);
    assert.equal(calls, 1);
  });

  it('ends a call with no answer at its deadline, with DeadlineError', async () => {
    handler = () => undefined; // never answers
    const impatient = createUpstreamHttp(limits(30));
    await assert.rejects(impatient.send(`${server.url}/graphql`, POST), DeadlineError);
  });

  it('ends a call whose body stalls at its deadline, with DeadlineError rather than the dropped socket', async () => {
    handler = (_req, _body, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"data":'); // and nothing more
    };
    const impatient = createUpstreamHttp(limits(30));
    await assert.rejects(impatient.send(`${server.url}/graphql`, POST), (err: unknown) => {
      assert.ok(err instanceof DeadlineError);
      assert.equal(err.name, 'TimeoutError');
      return true;
    });
  });

  it('gives a call sent with a deadline only the time left, and then closes its connection', async () => {
    let closed: Promise<void> = Promise.resolve();
    handler = (req) => {
      closed = new Promise((resolve) => req.socket.once('close', () => resolve()));
    }; // never answers
    // A client whose own deadline is far: the call's deadline, 50 ms away, is what ends it.
    const patient = createUpstreamHttp(limits(60_000));
    const started = performance.now();
    await assert.rejects(patient.send(`${server.url}/graphql`, { ...POST, deadline: started + 50 }), DeadlineError);
    await closed;
    assert.ok(performance.now() - started < 10_000, 'ended by the deadline, long before the client timeout');
  });

  it('rejects with the socket error code when nothing listens', async () => {
    const refused = await listen({ callback: () => () => undefined });
    const url = refused.url;
    await refused.close();
    await assert.rejects(http.send(`${url}/graphql`, POST), (err: unknown) => {
      assert.equal((err as { code?: unknown }).code, 'ECONNREFUSED');
      return true;
    });
  });

  it('answers 150 concurrent calls each with its own body, and keeps their connections for the next calls', async () => {
    handler = (_req, body, res) => {
      // Answers out of order, as a busy upstream does.
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
      }, Math.random() * 20);
    };
    sockets.clear();
    const bodies = Array.from({ length: 150 }, (_, i) => JSON.stringify({ call: i }));
    const answers = await Promise.all(bodies.map((body) => http.send(`${server.url}/echo`, { ...POST, body })));
    assert.deepEqual(
      answers.map((a) => a.text),
      bodies,
    );
    // Calls one after another after the burst run on kept-alive connections: at most the
    // first may open one (if the pool has not yet taken its connections back).
    const afterBurst = sockets.size;
    for (const body of bodies.slice(0, 20))
      assert.equal((await http.send(`${server.url}/echo`, { ...POST, body })).text, body);
    assert.ok(
      sockets.size - afterBurst <= 1,
      `20 calls after the burst opened ${sockets.size - afterBurst} connections`,
    );
  });
});

describe('upstream HTTP: calls end at their deadline, within their connections', () => {
  it('abandons 30 trickling answers at their deadline: no connection is open 1 s after their timeouts', async () => {
    const upstream = await countingServer((_req, res) => trickle(res));
    try {
      const http = createUpstreamHttp(limits(500));
      const outcomes = await Promise.all(
        Array.from({ length: 30 }, () => http.send(upstream.url, POST).then(String, (err: unknown) => err)),
      );
      assert.equal(outcomes.filter((outcome) => outcome instanceof DeadlineError).length, 30);
      await sleep(1000);
      assert.equal(upstream.counts.received, 30);
      assert.equal(upstream.counts.requests, 0, 'requests still open at the upstream');
      // Those that carried the calls, and any undici opened in their place (nodejs/undici#5845).
      assert.equal(upstream.counts.connections, 0, 'connections still open at the upstream');
    } finally {
      await upstream.close();
    }
  });

  it('closes only connections that carried no call: answers silent for 1 s before their headers are read, and their connections kept for the next calls', async () => {
    const carriers = new Set<Socket>();
    const upstream = await countingServer((req, res) => {
      carriers.add(req.socket);
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":{}}'), 1000);
    });
    try {
      const http = createUpstreamHttp(limits(5000));
      const first = await Promise.all(Array.from({ length: 10 }, () => http.send(upstream.url, POST)));
      assert.deepEqual(new Set(first.map((answer) => answer.text)), new Set(['{"data":{}}']));
      // Idle longer than an unused connection is kept, shorter than undici's keep-alive.
      await sleep(1000);
      const second = await Promise.all(Array.from({ length: 10 }, () => http.send(upstream.url, POST)));
      assert.deepEqual(new Set(second.map((answer) => answer.text)), new Set(['{"data":{}}']));
      assert.equal(upstream.counts.received, 20);
      assert.equal(carriers.size, 10, 'connections opened for the second calls');
    } finally {
      await upstream.close();
    }
  });

  it('reports 40 calls that got no headers in time as DeadlineError, also when the process was busy at their deadline', async () => {
    const upstream = await countingServer(() => undefined); // never answers
    try {
      const http = createUpstreamHttp(limits(300));
      const calls = Array.from({ length: 40 }, () => http.send(upstream.url, POST).then(String, (err: unknown) => err));
      // Busy across the deadline: every timer due then (ours, undici's own timeouts) runs in one turn.
      await sleep(200);
      const busyUntil = performance.now() + 250;
      while (performance.now() < busyUntil);
      const outcomes = await Promise.all(calls);
      const names = outcomes.map((outcome) => (outcome instanceof DeadlineError ? 'DeadlineError' : String(outcome)));
      assert.deepEqual(new Set(names), new Set(['DeadlineError']));
    } finally {
      await upstream.close();
    }
  });

  it('opens at most `connections` connections; the calls beyond wait for one and are all answered', async () => {
    const upstream = await countingServer((_req, res) => {
      setTimeout(() => res.end('{"data":{}}'), 30);
    });
    try {
      const http = createUpstreamHttp(limits(10_000, { connections: 4 }));
      const answers = await Promise.all(Array.from({ length: 24 }, () => http.send(upstream.url, POST)));
      assert.deepEqual(new Set(answers.map((answer) => answer.text)), new Set(['{"data":{}}']));
      assert.equal(upstream.counts.received, 24);
      assert.ok(upstream.counts.maxConnections <= 4, `${upstream.counts.maxConnections} connections at once`);
    } finally {
      await upstream.close();
    }
  });

  it('keeps a slow upstream to `connections` open requests, and never sends a call whose deadline passed while it waited', async () => {
    const upstream = await countingServer(() => undefined); // never answers
    try {
      const http = createUpstreamHttp(limits(60_000, { connections: 2 }));
      const started = performance.now();
      // Two calls hold both connections past the deadline of the eight behind them.
      const deadlines = [1000, 1000, ...Array.from({ length: 8 }, () => 300)];
      const outcomes = await Promise.all(
        deadlines.map((ms) =>
          http.send(upstream.url, { ...POST, deadline: started + ms }).then(String, (err: unknown) => err),
        ),
      );
      assert.equal(outcomes.filter((outcome) => outcome instanceof DeadlineError).length, 10);
      await sleep(300);
      assert.equal(upstream.counts.received, 2, 'calls sent after their deadline');
      assert.ok(upstream.counts.maxRequests <= 2, `${upstream.counts.maxRequests} requests open at once`);
      assert.equal(upstream.counts.used, 0);
    } finally {
      await upstream.close();
    }
  });

  it('refuses an answer whose stated length is over the bound without reading it', async () => {
    const upstream = await countingServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MAX_ANSWER_BYTES + 1) });
      res.write('{"data":'); // the rest never comes: the refusal does not wait for it
    });
    try {
      const http = createUpstreamHttp(limits(10_000));
      await assert.rejects(http.send(upstream.url, POST), AnswerTooLargeError);
      await sleep(200);
      assert.equal(upstream.counts.used, 0);
    } finally {
      await upstream.close();
    }
  });
});
