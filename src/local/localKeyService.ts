import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { announceEndpoint, DATA_FILE_NAME, lockDataDir, withdrawEndpoint } from './dataDirFiles.js';
import { parseDateTime } from '../rfc3339.js';
import { KeyEventLog, toSseFrame, type KeyEvent } from './keyEvents.js';
import { keyHashOf } from './keyMaterial.js';
import { isActive, KeyStore, type Organization, type UsageEvent } from './keyStore.js';
import { listenOn } from '../http/listenOn.js';
import { BodyTooLarge, closeServer, hasServiceToken, newServiceToken, readBody, sendJson, sendUnauthorized } from './localHttp.js';
import { LOCAL_KEYS } from './seedAccounts.js';

/**
 * The embedded key service: every call of key-service.md over node:http on loopback,
 * with the data in `<dataDir>/key-service.json`. Beyond the contract it has one local
 * administration call, PATCH /v1/organizations/{id} {plan?, ceiling?}, which announces
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
  updateOrganization(organizationId: string, changes: { plan?: string; ceiling?: number | null }): Promise<Organization | null>;
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 1_000_000;
const MAX_EVENTS_PER_CALL = 1000;
const NAME_MAX_CHARACTERS = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export async function startLocalKeyService(options: LocalKeyServiceOptions): Promise<LocalKeyService> {
  const now = options.now ?? (() => new Date());
  const token = options.token ?? newServiceToken();
  const lock = await lockDataDir(options.dataDir);
  try {
    const events = new KeyEventLog(now, options.eventRetentionMs);
    const store = await KeyStore.open(options.dataDir, now, (type, data) => events.append(type, data));
    const streams = new Set<ServerResponse>();
    const context: Context = { store, events, token, streams, pingIntervalMs: options.pingIntervalMs ?? 15_000 };
    const server = createServer((req, res) => {
      handle(req, res, context).catch(() => {
        if (!res.headersSent) sendJson(res, 500, { error: 'internal_error' });
        else res.destroy();
      });
    });
    const url = await listenOn(server, options.host ?? '127.0.0.1', options.port ?? 0);
    const announce = options.announce ?? true;
    if (announce) await announceEndpoint(options.dataDir, { url, token });
    const demo = store.verify(keyHashOf(LOCAL_KEYS.demo));
    let closing: Promise<void> | null = null;
    return {
      url,
      token,
      dataFile: join(options.dataDir, DATA_FILE_NAME),
      demoKey: LOCAL_KEYS.demo,
      demoKeyActive: demo !== null && isActive(demo.key, now().getTime()),
      updateOrganization: (organizationId, changes) => store.updateOrganization(organizationId, changes),
      close() {
        closing ??= (async () => {
          for (const stream of streams) stream.end();
          await closeServer(server);
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

interface Context {
  readonly store: KeyStore;
  readonly events: KeyEventLog;
  readonly token: string;
  readonly streams: Set<ServerResponse>;
  readonly pingIntervalMs: number;
}

type Body = Record<string, unknown>;

async function handle(req: IncomingMessage, res: ServerResponse, context: Context): Promise<void> {
  if (!hasServiceToken(req, context.token)) return sendUnauthorized(res);
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  const method = req.method ?? 'GET';

  if (path === '/v1/keys/verify') return method === 'POST' ? verify(req, res, context) : notAllowed(res, 'POST');
  if (path === '/v1/usage') return method === 'POST' ? usage(req, res, context) : notAllowed(res, 'POST');
  if (path === '/v1/events') return method === 'GET' ? stream(req, res, context) : notAllowed(res, 'GET');

  const keys = /^\/v1\/organizations\/([^/]+)\/keys$/.exec(path);
  if (keys) {
    const organizationId = decodeURIComponent(keys[1] ?? '');
    if (method === 'POST') return createKey(req, res, context, organizationId);
    if (method === 'GET') return listKeys(req, res, context, organizationId);
    return notAllowed(res, 'GET, POST');
  }
  const revoke = /^\/v1\/organizations\/([^/]+)\/keys\/([^/]+)\/revoke$/.exec(path);
  if (revoke) {
    if (method !== 'POST') return notAllowed(res, 'POST');
    return revokeKey(req, res, context, decodeURIComponent(revoke[1] ?? ''), decodeURIComponent(revoke[2] ?? ''));
  }
  const organization = /^\/v1\/organizations\/([^/]+)$/.exec(path);
  if (organization) {
    if (method !== 'PATCH') return notAllowed(res, 'PATCH');
    return updateOrganization(req, res, context, decodeURIComponent(organization[1] ?? ''));
  }
  sendJson(res, 404, { error: 'not_found' });
}

async function verify(req: IncomingMessage, res: ServerResponse, { store }: Context): Promise<void> {
  const body = await jsonBody(req);
  const keyHash = body?.['keyHash'];
  if (typeof keyHash !== 'string' || !/^[0-9a-f]{64}$/.test(keyHash)) return invalidRequest(res);
  const found = store.verify(keyHash);
  if (!found) return sendJson(res, 404, { error: 'unknown_key' });
  sendJson(res, 200, found);
}

async function usage(req: IncomingMessage, res: ServerResponse, { store }: Context): Promise<void> {
  const body = await jsonBody(req);
  const events = body?.['events'];
  if (!Array.isArray(events) || events.length < 1 || events.length > MAX_EVENTS_PER_CALL) return invalidRequest(res);
  const checked: UsageEvent[] = [];
  for (const event of events) {
    const valid = toUsageEvent(event);
    // One bad event refuses the whole call: nothing of it is counted.
    if (!valid) return invalidRequest(res);
    checked.push(valid);
  }
  sendJson(res, 200, await store.recordUsage(checked));
}

function toUsageEvent(value: unknown): UsageEvent | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const { id, keyId, organizationId, route, at } = value as Body;
  if (typeof id !== 'string' || !UUID.test(id)) return null;
  if (typeof keyId !== 'string' || keyId === '' || typeof organizationId !== 'string' || organizationId === '') return null;
  if (typeof route !== 'string' || route === '') return null;
  if (typeof at !== 'string' || parseDateTime(at) === null) return null;
  return { id: id.toLowerCase(), keyId, organizationId, route, at };
}

/** text/event-stream of changes; Last-Event-ID replays what was missed, or starts with `reset`. */
function stream(req: IncomingMessage, res: ServerResponse, { events, streams, pingIntervalMs }: Context): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
  });
  res.write(': connected\n\n');
  const lastEventId = req.headers['last-event-id'];
  const missed = typeof lastEventId === 'string' && lastEventId.trim() !== '' ? events.missedSince(lastEventId) : [];
  for (const event of missed) res.write(toSseFrame(event));
  const unsubscribe = events.subscribe((event: KeyEvent) => res.write(toSseFrame(event)));
  const ping = setInterval(() => res.write(': ping\n\n'), pingIntervalMs);
  ping.unref();
  streams.add(res);
  res.on('close', () => {
    clearInterval(ping);
    unsubscribe();
    streams.delete(res);
  });
}

interface Actor {
  id: string;
}

/** The acting person, when they hold manage_api_keys; otherwise the 403 is already sent. */
function actorWithKeyPermission(req: IncomingMessage, res: ServerResponse): Actor | null {
  const id = header(req, 'x-actor-id').trim();
  const permissions = header(req, 'x-actor-permissions').split(',').map((p) => p.trim());
  if (id === '' || !permissions.includes('manage_api_keys')) {
    sendJson(res, 403, { error: 'forbidden' });
    return null;
  }
  return { id };
}

async function createKey(req: IncomingMessage, res: ServerResponse, { store }: Context, organizationId: string): Promise<void> {
  const actor = actorWithKeyPermission(req, res);
  if (!actor) return;
  if (!store.hasOrganization(organizationId)) return sendJson(res, 404, { error: 'not_found' });
  const body = await jsonBody(req);
  if (!body) return invalidRequest(res);
  const { name, permissions, expiresAt } = body;
  const nameLength = typeof name === 'string' ? [...name].length : 0;
  if (typeof name !== 'string' || name.trim() === '' || nameLength > NAME_MAX_CHARACTERS) return invalidRequest(res);
  if (!Array.isArray(permissions) || !permissions.every((p): p is string => typeof p === 'string')) {
    return invalidRequest(res);
  }
  let expiresAtMs: number | null = null;
  if (expiresAt !== undefined && expiresAt !== null) {
    expiresAtMs = typeof expiresAt === 'string' ? parseDateTime(expiresAt) : null;
    if (expiresAtMs === null) return sendJson(res, 400, { error: 'invalid_expiry' });
  }
  const result = await store.createKey(organizationId, actor.id, { name, permissions, expiresAtMs });
  if (!result.ok) {
    const status = { not_found: 404, invalid_expiry: 400, active_key_limit: 409 }[result.error];
    return sendJson(res, status, { error: result.error });
  }
  sendJson(res, 201, { key: result.key, plaintext: result.plaintext }, { 'cache-control': 'no-store' });
}

function listKeys(req: IncomingMessage, res: ServerResponse, { store }: Context, organizationId: string): void {
  if (!actorWithKeyPermission(req, res)) return;
  const keys = store.listKeys(organizationId);
  if (keys === null) return sendJson(res, 404, { error: 'not_found' });
  sendJson(res, 200, { keys });
}

async function revokeKey(
  req: IncomingMessage,
  res: ServerResponse,
  { store }: Context,
  organizationId: string,
  keyId: string,
): Promise<void> {
  const actor = actorWithKeyPermission(req, res);
  if (!actor) return;
  const key = await store.revokeKey(organizationId, keyId, actor.id);
  if (key === null) return sendJson(res, 404, { error: 'not_found' });
  sendJson(res, 200, { key });
}

async function updateOrganization(
  req: IncomingMessage,
  res: ServerResponse,
  { store }: Context,
  organizationId: string,
): Promise<void> {
  const body = await jsonBody(req);
  if (!body) return invalidRequest(res);
  const changes: { plan?: string; ceiling?: number | null } = {};
  if (body['plan'] !== undefined) {
    if (typeof body['plan'] !== 'string' || body['plan'].trim() === '') return invalidRequest(res);
    changes.plan = body['plan'];
  }
  if (body['ceiling'] !== undefined) {
    const ceiling = body['ceiling'];
    if (ceiling !== null && !(typeof ceiling === 'number' && Number.isInteger(ceiling) && ceiling >= 0)) {
      return invalidRequest(res);
    }
    changes.ceiling = ceiling;
  }
  if (changes.plan === undefined && changes.ceiling === undefined) return invalidRequest(res);
  const organization = await store.updateOrganization(organizationId, changes);
  if (!organization) return sendJson(res, 404, { error: 'not_found' });
  sendJson(res, 200, { organization });
}

/** The body as a JSON object, or null when it is not one (or too large). */
async function jsonBody(req: IncomingMessage): Promise<Body | null> {
  let text: string;
  try {
    text = await readBody(req, MAX_BODY_BYTES);
  } catch (err: unknown) {
    if (err instanceof BodyTooLarge) return null;
    throw err;
  }
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Body) : null;
  } catch {
    return null;
  }
}

function header(req: IncomingMessage, name: string): string {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

function invalidRequest(res: ServerResponse): void {
  sendJson(res, 400, { error: 'invalid_request' });
}

function notAllowed(res: ServerResponse, allow: string): void {
  sendJson(res, 405, { error: 'method_not_allowed' }, { allow });
}
