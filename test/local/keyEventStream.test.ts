import assert from 'node:assert/strict';
import { keyHashOf } from '../../src/auth/keyFormat.js';
import { LOCAL_KEYS } from '../../src/local/seedAccounts.js';
import { openSseStream, type SseItem, type SseStream } from '../support/sseStream.js';
import {
  callKeyService,
  createKeyCall,
  LocalKeyServiceFixture,
  revokeKeyCall,
  updateOrganizationCall,
} from './keyServiceHttp.js';

const START = '2026-11-21T12:00:00.000Z';
const MINUTE = 60_000;
const isEvent = (item: SseItem) => item.kind === 'event';

describe('local key service: GET /v1/events', () => {
  const ks = new LocalKeyServiceFixture('local-events-', START, 40);
  const streams: SseStream[] = [];

  const open = async (lastEventId?: string) => {
    const stream = await openSseStream(`${ks.service.url}/v1/events`, {
      authorization: `Bearer ${ks.service.token}`,
      ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
    });
    streams.push(stream);
    // The stream is attached once its first comment arrived.
    await stream.next((item) => item.kind === 'comment');
    return stream;
  };
  const newKey = async (name: string) =>
    (await createKeyCall(ks.service, 'org_demo', { name, permissions: ['read'] })).body;

  afterEach(() => {
    for (const stream of streams.splice(0)) stream.close();
  });
  ks.useHooks();

  it('streams key.revoked with the key, its hash, organization and time', async () => {
    const stream = await open();
    assert.equal(stream.status, 200);
    assert.match(stream.contentType ?? '', /^text\/event-stream/);
    const { key, plaintext } = await newKey('to revoke');
    ks.clock.advance(1000);
    await revokeKeyCall(ks.service, 'org_demo', key.id);
    const event = await stream.next(isEvent);
    assert.equal(event.event, 'key.revoked');
    assert.match(event.id ?? '', /\S/);
    assert.deepEqual(JSON.parse(event.data), {
      keyId: key.id,
      keyHash: keyHashOf(plaintext),
      organizationId: 'org_demo',
      revokedAt: '2026-11-21T12:00:01.000Z',
    });
    // Revoking again changes nothing, so nothing is announced.
    await revokeKeyCall(ks.service, 'org_demo', key.id);
    await updateOrganizationCall(ks.service, 'org_demo', { ceiling: 10 });
    assert.equal((await stream.next(isEvent)).event, 'organization.updated');
  });

  it('streams organization.updated when a plan or ceiling changes (local PATCH)', async () => {
    const stream = await open();
    const answer = await callKeyService(ks.service, 'PATCH', '/v1/organizations/org_starter', {
      body: { plan: 'pro' },
    });
    assert.equal(answer.status, 200);
    const event = await stream.next(isEvent);
    assert.deepEqual(
      [event.event, JSON.parse(event.data)],
      ['organization.updated', { organizationId: 'org_starter' }],
    );
    const verified = await callKeyService<{ organization: { plan: string } }>(ks.service, 'POST', '/v1/keys/verify', {
      body: { keyHash: keyHashOf(LOCAL_KEYS.starter) },
    });
    assert.equal(verified.body.organization.plan, 'pro');
  });

  it('sends a `: ping` comment at the ping interval', async () => {
    const stream = await open();
    const ping = await stream.next((item) => item.kind === 'comment' && item.data === 'ping');
    assert.equal(ping.data, 'ping');
  });

  it('replays what a client missed after its Last-Event-ID, in order', async () => {
    const first = await open();
    const a = await newKey('a');
    const b = await newKey('b');
    const c = await newKey('c');
    await revokeKeyCall(ks.service, 'org_demo', a.key.id);
    const seen = await first.next(isEvent);
    first.close();
    await revokeKeyCall(ks.service, 'org_demo', b.key.id);
    await updateOrganizationCall(ks.service, 'org_demo', { plan: 'business' });
    await revokeKeyCall(ks.service, 'org_demo', c.key.id);

    const again = await open(seen.id);
    const missed = [await again.next(isEvent), await again.next(isEvent), await again.next(isEvent)];
    assert.deepEqual(
      missed.map((event) => [event.event, JSON.parse(event.data).keyId ?? JSON.parse(event.data).organizationId]),
      [
        ['key.revoked', b.key.id],
        ['organization.updated', 'org_demo'],
        ['key.revoked', c.key.id],
      ],
    );
    assert.equal(new Set([seen.id, ...missed.map((event) => event.id)]).size, 4, 'every event has its own id');

    // Up to date: reconnecting with the newest id replays nothing; new events still come.
    const upToDate = await open(missed[2]?.id);
    await updateOrganizationCall(ks.service, 'org_other', { ceiling: 5 });
    const next = await upToDate.next(isEvent);
    assert.deepEqual([next.event, JSON.parse(next.data)], ['organization.updated', { organizationId: 'org_other' }]);
  });

  it('starts with `reset` when what the client missed is older than 10 minutes', async () => {
    const first = await open();
    const a = await newKey('a');
    const b = await newKey('b');
    await revokeKeyCall(ks.service, 'org_demo', a.key.id);
    const seen = await first.next(isEvent);
    first.close();
    await revokeKeyCall(ks.service, 'org_demo', b.key.id); // missed...
    ks.clock.advance(10 * MINUTE + 1000); // ...and now out of the window

    const again = await open(seen.id);
    const reset = await again.next(isEvent);
    assert.deepEqual([reset.event, reset.data], ['reset', '{}']);
    assert.match(reset.id ?? '', /\S/);
    // After a reset the stream goes on, and the reset's id is a valid place to resume from.
    await updateOrganizationCall(ks.service, 'org_demo', { ceiling: 1 });
    assert.equal((await again.next(isEvent)).event, 'organization.updated');
    const resumed = await open(reset.id);
    const replayed = await resumed.next(isEvent);
    assert.deepEqual(
      [replayed.event, JSON.parse(replayed.data)],
      ['organization.updated', { organizationId: 'org_demo' }],
    );
  });

  it('keeps events for 10 minutes: a client back within the window gets no reset', async () => {
    const first = await open();
    const a = await newKey('a');
    const b = await newKey('b');
    await revokeKeyCall(ks.service, 'org_demo', a.key.id);
    const seen = await first.next(isEvent);
    first.close();
    await revokeKeyCall(ks.service, 'org_demo', b.key.id);
    ks.clock.advance(10 * MINUTE - 1000);
    const again = await open(seen.id);
    const replayed = await again.next(isEvent);
    assert.deepEqual([replayed.event, JSON.parse(replayed.data).keyId], ['key.revoked', b.key.id]);
  });

  it('starts with `reset` for an id it does not know (another run of the service, or garbage)', async () => {
    for (const lastEventId of ['0badf00d-3', 'garbage']) {
      const stream = await open(lastEventId);
      assert.equal((await stream.next(isEvent)).event, 'reset');
    }
    // A restart forgets the event log: ids of the previous run are unknown.
    const before = await open();
    await updateOrganizationCall(ks.service, 'org_demo', { ceiling: 2 });
    const old = await before.next(isEvent);
    before.close();
    await ks.restart();
    const after = await open(old.id);
    assert.equal((await after.next(isEvent)).event, 'reset');
  });

  it('ends open streams when the service closes', async () => {
    const stream = await open();
    await ks.service.close();
    await stream.ended;
    assert.equal(stream.received.filter(isEvent).length, 0);
    ks.service = await ks.startService();
  });
});
