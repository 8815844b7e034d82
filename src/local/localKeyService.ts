import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import Router, { type RouterContext } from '@koa/router';
import { z } from 'zod';
import { keyHashOf } from '../auth/keyFormat.js';
import { parseDateTime } from '../rfc3339.js';
import { announceEndpoint, DATA_FILE_NAME, lockDataDir, withdrawEndpoint } from './dataDirFiles.js';
import { isActive, type KeyEventType, KeyStore, NAME_MAX_CHARACTERS } from './keyStore.js';
import { serveUpstream } from './localHttp.js';
import { LOCAL_KEYS } from './seedAccounts.js';

/**
 * The embedded stand-in for the key service: every call of key-service.md, plus one local one,
 * PATCH /v1/organizations/{id} {plan?, ceiling?}, announcing `organization.updated` (the real
 * service changes plans elsewhere).
 */

export interface LocalKeyServiceOptions {
  readonly dataDir: string;
  readonly now?: () => Date;
  /** `: ping` comment interval on event streams; 15 s as the contract says. */
  readonly pingIntervalMs?: number;
  /** Write url+token into the data directory for `npm run keys` (default true). */
  readonly announce?: boolean;
}

export type LocalKeyService = Awaited<ReturnType<typeof startLocalKeyService>>;

const nonBlank = z.string().refine((text) => text.trim() !== '');
const VerifyBody = z.object({ keyHash: z.string().regex(/^[0-9a-f]{64}$/) });
const UsageEvent = z.object({
  id: z.guid().toLowerCase(),
  keyId: z.string().min(1),
  organizationId: z.string().min(1),
  route: z.string().min(1),
  at: z.string().refine((text) => parseDateTime(text) !== null),
});
// One bad event refuses the whole call: nothing of it is counted.
const UsageBody = z.object({ events: z.array(UsageEvent).min(1).max(1000) });
const CreateKeyBody = z.object({
  name: nonBlank.refine((name) => [...name].length <= NAME_MAX_CHARACTERS),
  permissions: z.array(z.string()),
  // Anything but a date-time (or nothing) becomes NaN, which the store answers with invalid_expiry.
  expiresAt: z
    .unknown()
    .optional()
    .transform((at) => (at == null ? null : ((typeof at === 'string' ? parseDateTime(at) : null) ?? Number.NaN))),
});
const UpdateOrganizationBody = z
  .object({ plan: nonBlank.optional(), ceiling: z.number().int().nonnegative().nullable().optional() })
  .refine((changes) => changes.plan !== undefined || changes.ceiling !== undefined);

const ERROR_CODES: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  // A body over the limit is one of another form, as the contract sees it.
  413: 'invalid_request',
};
const CREATE_REFUSALS = { invalid_expiry: 400, active_key_limit: 409 } as const;

export async function startLocalKeyService(options: LocalKeyServiceOptions) {
  const now = options.now ?? (() => new Date());
  const lock = await lockDataDir(options.dataDir);
  try {
    const events = new KeyEventLog(now);
    const store = await KeyStore.open(options.dataDir, now, (type, data) => events.append(type, data));
    const router = keyServiceRoutes(store, events, options.pingIntervalMs ?? 15_000);
    const served = await serveUpstream(router, (status) => ({ error: ERROR_CODES[status] ?? 'internal_error' }));
    const announce = options.announce ?? true;
    if (announce) await announceEndpoint(options.dataDir, served);
    const demo = store.verify(keyHashOf(LOCAL_KEYS.demo));
    let closing: Promise<void> | null = null;
    return {
      url: served.url,
      token: served.token,
      dataFile: join(options.dataDir, DATA_FILE_NAME),
      /** The demo key of org_demo (plaintext; stored hashed). */
      demoKey: LOCAL_KEYS.demo,
      /** false when the demo key was revoked or has expired in this data directory. */
      demoKeyActive: demo !== null && isActive(demo.key, now().getTime()),
      close(): Promise<void> {
        closing ??= (async () => {
          for (const stream of events.streams) stream.end();
          await served.close();
          await store.save();
          if (announce) await withdrawEndpoint(options.dataDir);
          await lock.release();
        })();
        return closing;
      },
    };
  } catch (err: unknown) {
    await lock.release();
    throw err;
  }
}

function keyServiceRoutes(store: KeyStore, events: KeyEventLog, pingMs: number): Router {
  const router = new Router();

  router.post('/v1/keys/verify', (ctx) => {
    const found = store.verify(parsed(ctx, VerifyBody).keyHash);
    ctx.status = found ? 200 : 404;
    ctx.body = found ?? { error: 'unknown_key' };
  });

  router.post('/v1/usage', async (ctx) => {
    ctx.body = await store.recordUsage(parsed(ctx, UsageBody).events);
  });

  // text/event-stream of changes; Last-Event-ID replays what was missed, or starts with `reset`.
  router.get('/v1/events', (ctx) => {
    const stream = new PassThrough();
    ctx.set({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
    });
    ctx.body = stream;
    stream.write(': connected\n\n');
    const lastEventId = ctx.get('last-event-id').trim();
    for (const event of lastEventId === '' ? [] : events.missedSince(lastEventId)) stream.write(sseFrame(event));
    const ping = setInterval(() => stream.write(': ping\n\n'), pingMs);
    ping.unref();
    events.streams.add(stream);
    ctx.res.once('close', () => {
      clearInterval(ping);
      events.streams.delete(stream);
      stream.end();
    });
  });

  router.post('/v1/organizations/:organizationId/keys', async (ctx) => {
    const actorId = actorWithKeyPermission(ctx);
    if (!store.hasOrganization(organizationOf(ctx))) ctx.throw(404);
    const result = await store.createKey(organizationOf(ctx), actorId, parsed(ctx, CreateKeyBody));
    ctx.status = 'error' in result ? CREATE_REFUSALS[result.error] : 201;
    if (ctx.status === 201) ctx.set('cache-control', 'no-store'); // the plaintext is in this answer only
    ctx.body = result;
  });

  router.get('/v1/organizations/:organizationId/keys', (ctx) => {
    actorWithKeyPermission(ctx);
    ctx.body = { keys: store.listKeys(organizationOf(ctx)) ?? ctx.throw(404) };
  });

  router.post('/v1/organizations/:organizationId/keys/:keyId/revoke', async (ctx) => {
    const actorId = actorWithKeyPermission(ctx);
    ctx.body = { key: (await store.revokeKey(organizationOf(ctx), ctx.params.keyId ?? '', actorId)) ?? ctx.throw(404) };
  });

  router.patch('/v1/organizations/:organizationId', async (ctx) => {
    const changes = parsed(ctx, UpdateOrganizationBody);
    ctx.body = { organization: (await store.updateOrganization(organizationOf(ctx), changes)) ?? ctx.throw(404) };
  });

  return router;
}

const organizationOf = (ctx: RouterContext): string => ctx.params.organizationId ?? '';

/** The request body as `schema` says, or 400 invalid_request. */
function parsed<T extends z.ZodType>(ctx: RouterContext, schema: T): z.output<T> {
  const result = schema.safeParse(ctx.request.body);
  return result.success ? result.data : ctx.throw(400);
}

/** The acting person, when they hold manage_api_keys; otherwise 403 forbidden. */
function actorWithKeyPermission(ctx: RouterContext): string {
  const id = ctx.get('x-actor-id').trim();
  const permissions = ctx.get('x-actor-permissions').split(',');
  if (id === '' || !permissions.some((p) => p.trim() === 'manage_api_keys')) ctx.throw(403);
  return id;
}

type KeyEvent = { id: string; type: KeyEventType | 'reset'; data: Record<string, unknown>; seq: number; atMs: number };

/**
 * The change events, kept 10 minutes (as the contract says) for a client reconnecting with
 * `Last-Event-ID`; when the events after its id are gone (older, or from before a restart) it
 * gets `reset`. Each new event goes to every open stream.
 */
class KeyEventLog {
  /** Ids of this process's events start with it; any other id predates a restart. */
  private readonly bootId = randomBytes(4).toString('hex');
  private readonly events: KeyEvent[] = [];
  private seq = 0;
  readonly streams = new Set<PassThrough>();

  constructor(private readonly now: () => Date) {}

  append(type: KeyEventType, data: Record<string, unknown>): void {
    this.seq += 1;
    const event = { id: `${this.bootId}-${this.seq}`, type, data, seq: this.seq, atMs: this.now().getTime() };
    this.events.push(event);
    this.dropExpired();
    for (const stream of this.streams) stream.write(sseFrame(event));
  }

  /** What a client that last saw `lastEventId` missed, or a reset when that cannot be told. */
  missedSince(lastEventId: string): KeyEvent[] {
    this.dropExpired();
    const match = /^([0-9a-f]+)-(\d+)$/.exec(lastEventId.trim());
    const seen = match && match[1] === this.bootId ? Number(match[2]) : null;
    // Events are kept in seq order, so the oldest kept one tells whether any after `seen` is gone.
    if (seen === null || seen > this.seq || seen < (this.events[0]?.seq ?? this.seq + 1) - 1) {
      // The reset carries the newest id, so reconnecting after it replays from here.
      return [{ id: `${this.bootId}-${this.seq}`, type: 'reset', data: {}, seq: this.seq, atMs: 0 }];
    }
    return this.events.filter((event) => event.seq > seen);
  }

  private dropExpired(): void {
    const oldestKept = this.now().getTime() - 10 * 60_000;
    while ((this.events[0]?.atMs ?? Infinity) < oldestKept) this.events.shift();
  }
}

const sseFrame = (event: KeyEvent) => `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
