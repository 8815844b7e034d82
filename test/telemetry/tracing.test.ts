import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from '../support/childEnvironment.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { spawnGateway, upstreamEnv } from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import { keywordsData } from '../support/platformAnswers.js';
import type { ProcessGroup } from '../support/processGroup.js';

/**
 * Tracing as an operator turns it on: the gateway as a child process with the standard
 * OTEL_* variables, an OTLP/HTTP receiver and a platform double on loopback, one public
 * call carrying the caller's traceparent.
 */

const KEY = testKey('tracing reader');
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN_ID = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE_ID}-${CALLER_SPAN_ID}-01`;
/** What a caller may send for the gateway to pass on, if it passed baggage on: it must not. */
const BAGGAGE = `caller.role=admin,${'padding='.padEnd(7_000, 'x')}`;
const PROBE_TRACE_ID = '7d3a1c9e5b2f4a6d8e0c1b3a5f7d9e2c';
const PROBE_TRACEPARENT = `00-${PROBE_TRACE_ID}-${CALLER_SPAN_ID}-01`;

interface Received {
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

async function listenOn(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: Array<{ key: string; value: Record<string, unknown> }>;
}

function spansOf(received: readonly Received[]): OtlpSpan[] {
  const spans: OtlpSpan[] = [];
  for (const { body } of received) {
    const payload = JSON.parse(body.toString('utf8')) as {
      resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
    };
    for (const resource of payload.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
  }
  return spans;
}

function attribute(span: OtlpSpan | undefined, key: string): unknown {
  const value = span?.attributes?.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

describe('OpenTelemetry traces over OTLP/HTTP', () => {
  let receiver: Server;
  let receiverUrl: string;
  const received: Received[] = [];
  let platform: Server;
  let platformUrl: string;
  const platformHeaders: IncomingHttpHeaders[] = [];
  let keyService: FakeKeyService;
  let gateway: ProcessGroup | undefined;

  before(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces')
          received.push({ contentType: req.headers['content-type'], body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/json' }).end('{}');
      });
    });
    receiverUrl = await listenOn(receiver);
    platform = createServer((req, res) => {
      platformHeaders.push(req.headers);
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: keywordsData() }));
      });
    });
    platformUrl = await listenOn(platform);
    keyService = await startFakeKeyService();
    keyService.setAnswer(KEY, verifyAnswer(KEY));
  });
  beforeEach(() => {
    received.length = 0;
    platformHeaders.length = 0;
    keyService.requestHeaders.length = 0;
  });
  afterEach(async () => {
    await gateway?.destroy();
    gateway = undefined;
  });
  after(async () => {
    await closeServer(receiver);
    await closeServer(platform);
    await keyService.close();
  });

  /** Starts the gateway with tracing, makes one traced public call, and stops it (spans flushed on the way out). */
  async function oneTracedCall(
    protocol: string,
    env: Record<string, string> = {},
  ): Promise<{ status: number; stdout: string }> {
    const port = await freePort();
    gateway = spawnGateway({
      SHUTDOWN_DELAY_SECONDS: '0',
      PORT: String(port),
      HOST: '127.0.0.1',
      ...upstreamEnv(platformUrl, keyService),
      LOG_LEVEL: 'INFO',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_SERVICE_NAME: 'gateway-under-test',
      ...env,
    });
    await gateway.waitForOutput(/Gateway listening on/, 20_000, 'stderr');
    // Probes and scrapes, even with a sampled traceparent, are never traced.
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const probe = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { traceparent: PROBE_TRACEPARENT } });
      await probe.arrayBuffer();
    }
    const res = await fetch(`http://127.0.0.1:${port}/v1/api/keywords?site=example.com`, {
      headers: { authorization: `Bearer ${KEY}`, traceparent: TRACEPARENT, tracestate: 'caller=1', baggage: BAGGAGE },
    });
    await res.arrayBuffer();
    gateway.signalGroup('SIGTERM');
    const exit = await gateway.exited;
    assert.equal(exit.code, 0, gateway.stderr());
    return { status: res.status, stdout: gateway.stdout() };
  }

  it('continues the caller trace (JSON): server, auth, limit, cache and platform spans; traceparent sent on', async () => {
    const { status, stdout } = await oneTracedCall('http/json');
    assert.equal(status, 200);
    assert.ok(received.length > 0, 'the receiver got spans');
    for (const { contentType } of received) assert.match(contentType ?? '', /^application\/json/);
    const spans = spansOf(received).filter((span) => span.traceId === TRACE_ID);
    assert.deepEqual(
      spansOf(received)
        .filter((span) => span.traceId === PROBE_TRACE_ID || /ReadinessProbe|healthz|readyz|metrics/.test(span.name))
        .map((span) => span.name),
      [],
      'no span of a probe or a scrape',
    );

    const server = spans.find((span) => span.name === 'GET /v1/api/keywords');
    assert.ok(server, `a server span named after the route: ${spans.map((s) => s.name).join(', ')}`);
    assert.equal(server.parentSpanId, CALLER_SPAN_ID);
    assert.equal(server.kind, 2, 'SERVER');
    assert.equal(attribute(server, 'http.route'), '/v1/api/keywords');
    assert.equal(Number(attribute(server, 'http.response.status_code')), 200);

    const byName = (name: string) => spans.find((span) => span.name === name);
    for (const name of ['auth', 'admit', 'cache']) assert.equal(byName(name)?.parentSpanId, server.spanId, name);
    assert.equal(attribute(byName('cache'), 'cache.result'), 'miss');
    const platformSpan = spans.find((span) => span.name.startsWith('platform '));
    assert.ok(platformSpan, 'a platform span');
    assert.equal(attribute(platformSpan, 'graphql.operation.name'), platformSpan.name.slice('platform '.length));

    // The usage flush that reported the call is a trace of its own, not part of the request's.
    const flush = spansOf(received).find((span) => span.name === 'usage.flush');
    assert.ok(flush, 'a usage.flush span');
    assert.notEqual(flush.traceId, TRACE_ID);

    // The platform double saw the same trace, continued from inside the gateway.
    // The readiness probe's calls (asked by /readyz and /metrics) carry no trace: only the request's do.
    const traced = platformHeaders.filter((headers) => headers.traceparent !== undefined);
    assert.ok(traced.length < platformHeaders.length, 'the probe called the platform, untraced');
    const sent = traced.map((headers) => headers.traceparent);
    assert.ok(sent.length > 0);
    for (const traceparent of sent) {
      assert.match(String(traceparent), new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
      assert.notEqual(String(traceparent).split('-')[2], CALLER_SPAN_ID);
    }
    assert.equal(traced[0]?.tracestate, 'caller=1');
    // The caller's baggage reaches neither upstream, nor the usage batch sent later in the background.
    assert.deepEqual(
      [...platformHeaders, ...keyService.requestHeaders].filter((headers) => headers.baggage !== undefined),
      [],
    );
    assert.ok(
      keyService.requestHeaders.some((headers) => headers.traceparent !== undefined),
      'the verify was traced',
    );
    const names = received.flatMap(({ body }) =>
      (
        JSON.parse(body.toString('utf8')) as {
          resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> } }>;
        }
      ).resourceSpans.map((r) => r.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue),
    );
    assert.deepEqual([...new Set(names)], ['gateway-under-test'], 'OTEL_SERVICE_NAME, as the SDK read it');

    // The request's log line names the trace.
    const line = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === 'request' && l.route === '/v1/api/keywords');
    assert.equal(line?.traceId, TRACE_ID);
  });

  it("keeps to the configured ratio whatever the caller's sampled flag says, unless told to trust it", async function () {
    this.timeout(60_000); // two gateway starts, each up to 20 s on a loaded machine
    const ratioZero = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' };
    const untrusted = await oneTracedCall('http/json', ratioZero);
    assert.equal(untrusted.status, 200);
    assert.deepEqual(
      spansOf(received).filter((span) => span.traceId === TRACE_ID),
      [],
      'no span of the caller trace exported at ratio 0',
    );
    // The trace is still continued: the platform sees the caller's trace id, marked not sampled.
    const sent = platformHeaders.map((headers) => headers.traceparent).filter((value) => value !== undefined);
    assert.ok(sent.length > 0);
    for (const traceparent of sent) assert.match(String(traceparent), new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-00$`));

    received.length = 0;
    platformHeaders.length = 0;
    await gateway?.destroy();
    const trusted = await oneTracedCall('http/json', { ...ratioZero, TRUST_CALLER_SAMPLING: 'true' });
    assert.equal(trusted.status, 200);
    assert.ok(
      spansOf(received).some((span) => span.traceId === TRACE_ID),
      'with TRUST_CALLER_SAMPLING the flag decides',
    );
  });

  it('speaks protobuf when OTEL_EXPORTER_OTLP_PROTOCOL says so', async () => {
    const { status } = await oneTracedCall('http/protobuf');
    assert.equal(status, 200);
    assert.ok(received.length > 0, 'the receiver got spans');
    for (const { contentType } of received) assert.equal(contentType, 'application/x-protobuf');
    // Trace ids travel as 16 raw bytes in protobuf.
    assert.ok(received.some(({ body }) => body.includes(Buffer.from(TRACE_ID, 'hex'))));
  });
});
