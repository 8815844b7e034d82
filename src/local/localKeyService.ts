import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import type Koa from 'koa';
import { z } from 'zod';
import { parseDateTime } from '../rfc3339.js';
import { announceEndpoint, DATA_FILE_NAME, lockDataDir, withdrawEndpoint } from './dataDirFiles.js';
import { KeyEventLog, toSseFrame } from './keyEvents.js';
import { keyHashOf } from './keyMaterial.js';
import { isActive, KeyStore, NAME_MAX_CHARACTERS, type Organization } from './keyStore.js';
import { newServiceToken, serve, upstreamApp } from './localHttp.js';
import { LOCAL_KEYS } from './seedAccounts.js';

/**
 * The embedded stand-in for the key service: every call of key-service.md over HTTP on
 * loopback, with the data in `<dataDir>/key-service.json`. Beyond the contract it has one
 * local administration call, PATCH /v1/organizations/{id} {plan?, ceiling?}, which announces
 * `organization.updated` (the real service changes plans elsewhere).
 */

export interface LocalKeyServiceOptions {
  readonly dataDir: string;
  readonly now?: () => Date;
  /** Service token callers must present; a random one by default. */
  readonly token?: string;
  readonly host?: string;
  /** 0 (default): a free port. */
  readonly port?: number;
  /** `: ping` comment interval on event streams; 15 s as the contract says. */
  readonly pingIntervalMs?: number;
  /** How long events are kept for Last-Event-ID replay; 10 minutes as the contract says. */
  readonly eventRetentionMs?: number;
  /** Write url+token into the data directory for `npm run keys` (default true). */
  readonly announce?: boolean;
}

export interface LocalKeyService {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:41235 */
  readonly url: string;
  readonly token: string;
  readonly dataFile: string;
  /** The demo key of org_demo (plaintext; stored hashed). */
  readonly demoKey: string;
  /** false when the demo key was revoked or has expired in this data directory. */
  readonly demoKeyActive: boolean;
  updateOrganization(
    organizationId: string,
    changes: { plan?: string; ceiling?: number | null },
  ): Promise<Organization | null>;
  close(): Promise<void>;
}

const MAX_EVENTS_PER_CALL = 1000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const dateTime = z.string().refine((text) => parseDateTime(text) !== null);
const nonBlank = z.string().refine((text) => text.trim() !== '');

const VerifyBody = z.object({ keyHash: z.string().regex(/^[0-9a-f]{64}$/) });
const UsageBody = z.object({
  // One bad event refuses the whole call: nothing of it is counted.
  events: z
    .array(
      z.object({
        id: z
          .string()
          .regex(UUID)
          .transform((id) => id.toLowerCase()),
        keyId: z.string().min(1),
        organizationId: z.string().min(1),
        route: z.string().min(1),
        at: dateTime,
      }),
    )
    .min(1)
    .max(MAX_EVENTS_PER_CALL),
});
const CreateKeyBody = z.object({
  name: nonBlank.refine((name) => [...name].length <= NAME_MAX_CHARACTERS),
  permissions: z.array(z.string()),
  // Checked apart: a bad expiry has its own answer, invalid_expiry.
  expiresAt: z.unknown().optional(),
});
const UpdateOrganizationBody = z
  .object({ plan: nonBlank.optional(), ceiling: z.number().int().nonnegative().nullable().optional() })
  .refine((changes) => changes.plan !== undefined || changes.ceiling !== undefined);

export async function startLocalKeyService(options: LocalKeyServiceOptions): Promise<LocalKeyService> {
  const now = options.now ?? (() => new Date());
  const token = options.token ?? newServiceToken();
  const lock = await lockDataDir(options.dataDir);
  try {
    const events = new KeyEventLog(now, options.eventRetentionMs);
    const store = await KeyStore.open(options.dataDir, now, (type, data) => events.append(type, data));
    const streams = new Set<PassThrough>();
    const app = keyServiceApp({ store, events, token, streams, pingIntervalMs: options.pingIntervalMs ?? 15_000 });
    const served = await serve(app, options.host ?? '127.0.0.1', options.port ?? 0);
    const announce = options.announce ?? true;
    if (announce) await announceEndpoint(options.dataDir, { url: served.url, token });
    const demo = store.verify(keyHashOf(LOCAL_KEYS.demo));
    let closing: Promise<void> | null = null;
    return {
      url: served.url,
      token,
      dataFile: join(options.dataDir, DATA_FILE_NAME),
      demoKey: LOCAL_KEYS.demo,
      demoKeyActive: demo !== null && isActive(demo.key, now().getTime()),
      updateOrganization: (organizationId, changes) => store.updateOrganization(organizationId, changes),
      close() {
        closing ??= (async () => {
          for (const stream of streams) stream.end();
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

interface KeyServiceState {
  readonly store: KeyStore;
  readonly events: KeyEventLog;
  readonly token: string;
  readonly streams: Set<PassThrough>;
  readonly pingIntervalMs: number;
}

const ERROR_CODES: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  // A body over the limit is one of another form, as the contract sees it.
  413: 'invalid_request',
};

function keyServiceApp({ store, events, token, streams, pingIntervalMs }: KeyServiceState): Koa {
  const router = new Router();

  router.post('/v1/keys/verify', (ctx) => {
    const { keyHash } = parsed(ctx, VerifyBody);
    const found = store.verify(keyHash);
    answer(ctx, found ? 200 : 404, found ?? { error: 'unknown_key' });
  });

  router.post('/v1/usage', async (ctx) => {
    answer(ctx, 200, await store.recordUsage(parsed(ctx, UsageBody).events));
  });

  // text/event-stream of changes; Last-Event-ID replays what was missed, or starts with `reset`.
  router.get('/v1/events', (ctx) => {
    const stream = new PassThrough();
    ctx.set({
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
    });
    ctx.status = 200;
    ctx.body = stream;
    stream.write(': connected\n\n');
    const lastEventId = ctx.get('last-event-id').trim();
    for (const event of lastEventId === '' ? [] : events.missedSince(lastEventId)) stream.write(toSseFrame(event));
    const unsubscribe = events.subscribe((event) => stream.write(toSseFrame(event)));
    const ping = setInterval(() => stream.write(': ping\n\n'), pingIntervalMs);
    ping.unref();
    streams.add(stream);
    ctx.res.once('close', () => {
      clearInterval(ping);
      unsubscribe();
      streams.delete(stream);
      stream.end();
    });
  });

  router.post('/v1/organizations/:organizationId/keys', async (ctx) => {
    const actorId = actorWithKeyPermission(ctx);
    if (!store.hasOrganization(organizationOf(ctx))) return answer(ctx, 404, { error: 'not_found' });
    const { name, permissions, expiresAt } = parsed(ctx, CreateKeyBody);
    const expiresAtMs = typeof expiresAt === 'string' ? parseDateTime(expiresAt) : null;
    if (expiresAt !== undefined && expiresAt !== null && expiresAtMs === null)
      return answer(ctx, 400, { error: 'invalid_expiry' });
    const result = await store.createKey(organizationOf(ctx), actorId, { name, permissions, expiresAtMs });
    if (!result.ok) {
      return answer(ctx, { not_found: 404, invalid_expiry: 400, active_key_limit: 409 }[result.error], {
        error: result.error,
      });
    }
    ctx.set('cache-control', 'no-store');
    answer(ctx, 201, { key: result.key, plaintext: result.plaintext });
  });

  router.get('/v1/organizations/:organizationId/keys', (ctx) => {
    actorWithKeyPermission(ctx);
    const keys = store.listKeys(organizationOf(ctx));
    answer(ctx, keys ? 200 : 404, keys ? { keys } : { error: 'not_found' });
  });

  router.post('/v1/organizations/:organizationId/keys/:keyId/revoke', async (ctx) => {
    const actorId = actorWithKeyPermission(ctx);
    const key = await store.revokeKey(organizationOf(ctx), ctx.params.keyId ?? '', actorId);
    answer(ctx, key ? 200 : 404, key ? { key } : { error: 'not_found' });
  });

  router.patch('/v1/organizations/:organizationId', async (ctx) => {
    const organization = await store.updateOrganization(organizationOf(ctx), parsed(ctx, UpdateOrganizationBody));
    answer(ctx, organization ? 200 : 404, organization ? { organization } : { error: 'not_found' });
  });

  return upstreamApp(token, router, (status) => ({ error: ERROR_CODES[status] ?? 'internal_error' }));
}

function organizationOf(ctx: Koa.Context & { params: Record<string, string | undefined> }): string {
  return ctx.params.organizationId ?? '';
}

function answer(ctx: Koa.Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = body;
}

/** The request body as `schema` says, or 400 invalid_request. */
function parsed<T extends z.ZodType>(ctx: Koa.Context, schema: T): z.output<T> {
  const result = schema.safeParse(ctx.request.body);
  if (!result.success) ctx.throw(400);
  return result.data;
}

/** The acting person, when they hold manage_api_keys; otherwise 403 forbidden. */
function actorWithKeyPermission(ctx: Koa.Context): string {
  const id = ctx.get('x-actor-id').trim();
  const permissions = ctx
    .get('x-actor-permissions')
    .split(',')
    .map((p) => p.trim());
  if (id === '' || !permissions.includes('manage_api_keys')) ctx.throw(403);
  return id;
}
