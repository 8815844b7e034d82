import assert from 'node:assert/strict';
import { seedPlatformData } from '../../src/local/seedData.js';
import { eventually } from '../support/eventually.js';
import { type FakeKeyService, startFakeKeyService } from '../support/fakeKeyService.js';
import { spawnGateway } from '../support/gatewayProcess.js';
import { testKey, verifyAnswer } from '../support/keys.js';
import type { ProcessGroup } from '../support/processGroup.js';
import { tempDir } from '../support/tempDir.js';
import { callGateway, type GatewayAnswer } from './gatewayCalls.js';
import { type HeldPlatform, startHeldPlatform } from './heldPlatform.js';

const DAY_MS = 86_400_000;
const SHUTTING_DOWN = 'shutting down: taking no new connections, finishing requests in flight';

/**
 * The real main process (`node --import tsx src/main.ts`, what `npm start` runs) with
 * real upstreams in this test: the local platform's data behind a server that can hold
 * answers, and a fake key service that counts usage events by id. A burst of mixed
 * outcomes, some answered and some in flight, then SIGTERM to the group and SIGTERM to
 * the process: every in-flight request is answered, the process exits 0 within 10 s, and
 * the key service holds exactly one event per 200/304 answer and none for failures.
 */
describe('SIGTERM through the real main process: in-flight requests answered, usage flushed', function () {
  this.timeout(60_000);
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let keyService: FakeKeyService;
  let platform: HeldPlatform;
  let gateway: ProcessGroup | undefined;

  const reader = testKey('e2e shutdown reader');
  const writer = testKey('e2e shutdown writer');
  const stranger = testKey('e2e shutdown stranger');

  before(async () => {
    dir = await tempDir('e2e-shutdown-');
    keyService = await startFakeKeyService();
    const expiresAt = new Date(Date.now() + 365 * DAY_MS).toISOString();
    keyService.setAnswer(
      reader,
      verifyAnswer(reader, { key: { organizationId: 'org_demo', expiresAt }, usage: { ceiling: null } }),
    );
    keyService.setAnswer(
      writer,
      verifyAnswer(writer, {
        key: { organizationId: 'org_demo', expiresAt, permissions: ['write'] },
        usage: { ceiling: null },
      }),
    );
    platform = await startHeldPlatform(seedPlatformData(new Date()));
  });

  after(async () => {
    await gateway?.destroy();
    platform?.release();
    await platform?.close();
    await keyService?.close();
    await dir?.remove();
  });

  it('answers the requests in flight, exits 0 within 10 s, and the key service got one event per 200/304', async () => {
    gateway = spawnGateway({
      SHUTDOWN_DELAY_SECONDS: '0',
      PORT: '0',
      LOG_LEVEL: 'info',
      PLATFORM_GRAPHQL_URL: platform.url,
      PLATFORM_TOKEN: platform.token,
      KEY_SERVICE_URL: keyService.url,
      KEY_SERVICE_TOKEN: keyService.token,
      // Held answers must not turn into 504s on a busy machine.
      UPSTREAM_TIMEOUT_MS: '9000',
      LOCAL_DATA_DIR: dir.path,
    });
    const url = (await gateway.waitForOutput(/Gateway listening on (http:\/\/\S+)\n/, 45_000, 'stderr'))[1] ?? '';
    const get = (path: string, key: string = reader, headers: Record<string, string> = {}) =>
      callGateway(url, path, key, headers);

    // Answered before the signal: successes (one 304 among them) and failures of every kind.
    const first = await get('/v1/api/keywords?site=acme.com&limit=5');
    const answered: GatewayAnswer[] = [
      first,
      await get('/v1/api/keywords?site=acme.com&limit=5', reader, { 'if-none-match': first.headers.get('etag') ?? '' }),
      ...(await Promise.all([
        get('/v1/api/rankings?site=acme.com'),
        get('/v1/api/ai-visibility/summary?site=acme.com'),
        get('/v1/api/keywords?site=acme.com', stranger),
        get('/v1/api/keywords?site=acme.com', writer),
        get('/v1/api/keywords?site=acme'),
        get('/v1/api/keywords?site=nowhere.example'),
      ])),
    ];
    assert.deepEqual(
      answered.map((answer) => answer.status),
      [200, 304, 200, 200, 401, 403, 400, 404],
    );

    // In flight when the signal comes: each waits for its platform answer.
    platform.hold();
    const inFlightPaths = [
      '/v1/api/keywords?site=acme.com&limit=7',
      '/v1/api/keywords?site=bigcatalog.shop&limit=20',
      '/v1/api/rankings?site=acme.com&days=30',
      '/v1/api/audit-issues?site=acme.com',
      '/v1/api/audit-issues?site=newsite.io',
      '/v1/api/ai-visibility/summary?site=acme',
      '/v1/api/rankings?site=nowhere.example',
    ];
    const inFlight = inFlightPaths.map((path) => get(path));
    await eventually(
      'every request in flight reached the platform',
      () => platform.held() === inFlightPaths.length,
      10_000,
    );

    const signalled = Date.now();
    const pid = gateway.pid;
    // npm would not pass the signal on: operators signal the group; then it comes again, to the process itself.
    gateway.signalGroup('SIGTERM');
    await gateway.waitForOutput(new RegExp(`"msg":"${SHUTTING_DOWN}"`), 5000);
    process.kill(pid, 'SIGTERM');
    await gateway.waitForOutput(/"msg":"shutdown already in progress"/, 5000);
    platform.release();

    const late = await Promise.all(inFlight);
    assert.deepEqual(
      late.map((answer) => answer.status),
      [200, 200, 200, 200, 200, 400, 404],
    );
    const exit = await gateway.exitWithin(10_000);
    assert.deepEqual(exit, { code: 0, signal: null }, gateway.stderr());
    assert.ok(Date.now() - signalled < 10_000, 'exited within 10 s of the signal');
    assert.equal(gateway.groupAlive(), false);

    const logs = gateway
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; code?: number });
    assert.equal(logs.filter((line) => line.msg === SHUTTING_DOWN).length, 1, 'one shutdown, however many signals');
    assert.deepEqual(
      logs.filter((line) => line.msg === 'shutdown complete').map((line) => line.code),
      [0],
    );

    // One event per 200/304 answer, by unique id, for the right key, organization and route; none for failures.
    const successes = [...answered, ...late].filter((answer) => answer.status === 200 || answer.status === 304);
    const events = keyService.usageEvents;
    assert.equal(new Set(events.map((event) => event.id)).size, events.length);
    assert.equal(events.length, successes.length);
    const routes = (list: ReadonlyArray<string>) =>
      list.reduce<Record<string, number>>((counts, route) => {
        counts[route] = (counts[route] ?? 0) + 1;
        return counts;
      }, {});
    assert.deepEqual(routes(events.map((event) => String(event.route))), {
      '/v1/api/keywords': 4,
      '/v1/api/rankings': 2,
      '/v1/api/ai-visibility/summary': 1,
      '/v1/api/audit-issues': 2,
    });
    const readerKeyId = verifyAnswer(reader).key.id;
    assert.ok(events.every((event) => event.keyId === readerKeyId && event.organizationId === 'org_demo'));
  });
});
