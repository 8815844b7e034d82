import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, KeyCliEnvSchema, problemLines, processEnvironment, type UpstreamTarget } from '../config.js';
import { DataDirBusy, errorCode, runningEndpoint } from './dataDirFiles.js';
import { ACTIVE_KEY_LIMIT, DAY_MS, type Key, MAX_LIFETIME_DAYS, NAME_MAX_CHARACTERS } from './keyStore.js';
import { startLocalKeyService } from './localKeyService.js';
import { LOCAL_OWNER_ID } from './seedAccounts.js';

/**
 * `npm run keys`, the embedded stand-in's key CLI, over the key service's HTTP contract: to
 * KEY_SERVICE_URL when set, else to the running `npm start`'s local key service, else to one of its own.
 */

/** What each permission grants (public-rest-v1.md 5.2); any other name grants nothing, so it is refused unless told. */
const KEY_PERMISSIONS: Readonly<Record<string, string>> = {
  read: 'GET on the public /v1/api/* routes',
  write: 'nothing on these routes (reserved for write routes)',
  audit: "the content-management plugin's audit routes, not these routes",
  content: "the content-management plugin's content routes, not these routes",
};

const USAGE = `Usage:
  npm run keys -- create --org <id> --name <name> [--permissions read,write] [--expires-in-days N]
  npm run keys -- list --org <id>
  npm run keys -- revoke --org <id> <keyId>
Options:
  --actor <userId>              the acting person (default ${LOCAL_OWNER_ID})
  --actor-permissions <list>    their organization permissions (default manage_api_keys)
  --allow-unknown-permissions   accept --permissions names other than those below (they grant nothing)
  --json                        print the key service's answer as JSON
Permissions (--permissions, default read):
${table(Object.entries(KEY_PERMISSIONS).map(([name, grants]) => [`  ${name}`, grants])).join('\n')}`;

const OPTIONS = {
  org: { type: 'string' },
  name: { type: 'string' },
  permissions: { type: 'string', default: 'read' },
  'expires-in-days': { type: 'string' },
  actor: { type: 'string', default: LOCAL_OWNER_ID },
  'actor-permissions': { type: 'string', default: 'manage_api_keys' },
  json: { type: 'boolean' },
  'allow-unknown-permissions': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type CliOutput = { out(line: string): void; err(line: string): void };
export type Actor = { id: string; permissions: readonly string[] };

/** A command: the lines it prints once done against the key service. */
type Command = (target: UpstreamTarget) => Promise<string[]>;

class UsageError extends Error {}

export class KeyManagementRefusal extends Error {
  override name = 'KeyManagementRefusal';
  /** The connection was never made, so nothing happened. */
  connectionRefused = false;
}

/**
 * Runs one command; answers the exit code (0 done, 1 refused or failed, 2 wrong usage). Every line
 * but the usage text is printed escaped: a value from the command line or the key service (an
 * organization, a key id, a name, an error's text) cannot act on the terminal or forge a line.
 */
export async function runKeysCli(argv: readonly string[], output: CliOutput): Promise<number> {
  const out = (line: string) => output.out(printable(line));
  const err = (line: string) => output.err(printable(line));
  try {
    const command = commandOf(argv);
    if (command === 'help') {
      output.out(USAGE);
      return 0;
    }
    const { keyService, localDataDir } = loadKeyCliConfig();
    const lines = keyService ? await command(keyService) : await withLocalKeyService(resolve(localDataDir), command);
    for (const line of lines) out(line);
    return 0;
  } catch (failure: unknown) {
    const refused = failure instanceof KeyManagementRefusal || failure instanceof DataDirBusy;
    if (refused) err(`keys: ${failure.message}`);
    else if (failure instanceof UsageError) {
      err(`keys: ${failure.message}`);
      output.err(USAGE);
    } else if (failure instanceof ConfigError) for (const problem of failure.problems) err(`keys: ${problem}`);
    else throw failure;
    return refused ? 1 : 2;
  }
}

/**
 * The key CLI's configuration: only KEY_SERVICE_URL / KEY_SERVICE_TOKEN (null: the local key
 * service) and LOCAL_DATA_DIR matter, so an operator can manage keys without naming a platform.
 */
export function loadKeyCliConfig(env: Readonly<Record<string, string | undefined>> = processEnvironment()) {
  const parsed = KeyCliEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemLines(parsed.error));
  const { KEY_SERVICE_URL: url, KEY_SERVICE_TOKEN: token, LOCAL_DATA_DIR: localDataDir } = parsed.data;
  if (url && !token) throw new ConfigError(['KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL']);
  const keyService: UpstreamTarget | null = url && token ? { url: url.replace(/\/+$/, ''), token } : null;
  return { keyService, localDataDir };
}

/** What the command line asks for, or a UsageError saying what is wrong with it. */
function commandOf(argv: readonly string[]): Command | 'help' {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], allowPositionals: true, options: OPTIONS });
  } catch (err: unknown) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === 'help') return 'help';
  if (command === undefined) throw new UsageError('a command is required: create, list or revoke');
  const org = values.org?.trim();
  if (!org) throw new UsageError('--org <id> is required');
  const actor = { id: values.actor.trim() || LOCAL_OWNER_ID, permissions: commaList(values['actor-permissions']) };
  const [keyId, ...extra] = command === 'revoke' ? rest : [undefined, ...rest];
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);
  // What the key service answers is escaped before it is laid out, so columns line up on what is
  // shown; JSON is printed line by line, each escaped as every line is (and still valid JSON).
  const print = (json: unknown, lines: (shown: typeof json) => string[]) =>
    values.json ? JSON.stringify(json, null, 2).split('\n') : lines(printableDeep(json));

  switch (command) {
    case 'create': {
      const { name } = values;
      if (name === undefined) throw new UsageError('create needs --name <name>');
      if (UNPRINTABLE.test(name)) {
        throw new UsageError(
          '--name must not hold control characters (line breaks, tabs, escape sequences) nor ones that show ' +
            'as nothing or as a space (bidi marks, zero-width, separators, tags, Hangul fillers, spaces other than U+0020)',
        );
      }
      const permissions = commaList(values.permissions);
      const unknown = permissions.filter((permission) => !Object.hasOwn(KEY_PERMISSIONS, permission));
      if (permissions.length === 0) {
        throw new UsageError('--permissions names no permission; a key without one grants nothing');
      }
      if (unknown.length > 0 && !values['allow-unknown-permissions']) {
        throw new UsageError(
          `unknown permission ${unknown.join(', ')}: it grants nothing (--allow-unknown-permissions to insist)`,
        );
      }
      const days = values['expires-in-days']?.trim();
      if (days !== undefined && !/^\d+$/.test(days)) {
        throw new UsageError(`--expires-in-days must be a whole number of days (1 to ${MAX_LIFETIME_DAYS})`);
      }
      return async (target) => {
        const expiresAt = days === undefined ? undefined : new Date(Date.now() + Number(days) * DAY_MS).toISOString();
        const created = await createKey(target, actor, org, { name, permissions, ...(expiresAt ? { expiresAt } : {}) });
        return print(created, (shown) => {
          const { key, plaintext } = shown as typeof created;
          return [
            `Created key ${key.id} for ${org}`,
            ...table([
              ['  name', key.name],
              ['  prefix', key.prefix],
              ['  permissions', key.permissions.join(',') || '(none)'],
              ['  state', keyState(key)],
              ['  expires', key.expiresAt],
            ]),
            'The plaintext key is shown only now; store it safely:',
            plaintext,
          ];
        });
      };
    }
    case 'list':
      return async (target) => {
        const { keys } = await call<{ keys: Key[] }>(target, actor, 'GET', keysPath(org), { organizationId: org });
        const row = (k: Key) => [k.id, k.prefix, keyState(k), k.permissions.join(',') || '-', k.expiresAt, k.name];
        const header = ['ID', 'PREFIX', 'STATE', 'PERMISSIONS', 'EXPIRES', 'NAME'];
        return print({ keys }, (shown) => {
          const listed = (shown as { keys: Key[] }).keys;
          return listed.length ? table([header, ...listed.map(row)]) : [`${printable(org)} has no keys`];
        });
      };
    case 'revoke':
      if (!keyId) throw new UsageError('revoke needs the key id: revoke --org <id> <keyId>');
      return async (target) => {
        const path = `${keysPath(org)}/${encodeURIComponent(keyId)}/revoke`;
        const { key } = await call<{ key: Key }>(target, actor, 'POST', path, { organizationId: org, keyId }, {});
        return print({ key }, (shown) => {
          const revoked = (shown as { key: Key }).key;
          return [
            `Key ${revoked.id} (${revoked.prefix}) is revoked since ${revoked.revokedAt} by ${revoked.revokedBy}; it stays listed.`,
          ];
        });
      };
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** The running local key service of this data directory, or one started here for the call. */
async function withLocalKeyService(dataDir: string, command: Command): Promise<string[]> {
  const running = await runningEndpoint(dataDir);
  if (running) {
    try {
      return await command(running);
    } catch (err: unknown) {
      // A stale endpoint (its process died): nothing reached it, so start one here instead.
      if (!(err instanceof KeyManagementRefusal && err.connectionRefused)) throw err;
    }
  }
  const service = await startLocalKeyService({ dataDir, announce: false });
  try {
    return await command(service);
  } finally {
    await service.close();
  }
}

/** `POST /v1/organizations/{id}/keys` of key-service.md: the new key and its only plaintext. */
export function createKey(
  target: UpstreamTarget,
  actor: Actor,
  organizationId: string,
  request: { name: string; permissions: readonly string[]; expiresAt?: string },
): Promise<{ key: Key; plaintext: string }> {
  return call(target, actor, 'POST', keysPath(organizationId), { organizationId }, request);
}

const keysPath = (organizationId: string) => `/v1/organizations/${encodeURIComponent(organizationId)}/keys`;

/** What a call is about, for the refusal's message. */
type About = { organizationId: string; keyId?: string };

/** The answer's body when it is a success; anything else is a KeyManagementRefusal. */
async function call<T>(
  target: UpstreamTarget,
  actor: Actor,
  method: string,
  path: string,
  about: About,
  body?: unknown,
): Promise<T> {
  let response: Response;
  try {
    response = await fetch(`${target.url.replace(/\/+$/, '')}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${target.token}`,
        'x-actor-id': actor.id,
        'x-actor-permissions': actor.permissions.join(','),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err: unknown) {
    // fetch wraps the system error (ECONNREFUSED...) in its cause.
    const code = errorCode(err) ?? errorCode((err as { cause?: unknown }).cause);
    const reason = typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
    const refusal = new KeyManagementRefusal(`the key service at ${target.url} is unreachable (${reason})`);
    throw Object.assign(refusal, { connectionRefused: code === 'ECONNREFUSED' });
  }
  const answer: unknown = await response.json().catch(() => null);
  if (response.ok) return answer as T;
  throw new KeyManagementRefusal(refusal(response, answer, actor, about));
}

/** The one line a person reads for each refusal the contract names. */
function refusal(response: Response, answer: unknown, actor: Actor, { organizationId, keyId }: About): string {
  const { status } = response;
  if (status === 401) return 'the key service refused the service token (401): check KEY_SERVICE_TOKEN';
  if (status === 429 || status === 503) {
    const retryAfter = response.headers.get('retry-after');
    return `the key service is busy (${status})${retryAfter ? `; retry after ${retryAfter} s` : '; retry later'}`;
  }
  switch (typeof answer === 'object' && answer !== null ? (answer as { error?: unknown }).error : undefined) {
    case 'forbidden':
      return `forbidden: ${actor.id} does not hold the manage_api_keys permission`;
    case 'not_found':
      return keyId === undefined
        ? `not found: the key service knows no organization ${organizationId}`
        : `not found: organization ${organizationId} has no key ${keyId}`;
    case 'active_key_limit':
      return `active key limit: ${organizationId} already has ${ACTIVE_KEY_LIMIT} active keys; revoke one first`;
    case 'invalid_expiry':
      return `invalid expiry: a key must expire within 1 to ${MAX_LIFETIME_DAYS} days from now`;
    case 'invalid_request':
      return `invalid request: the name must be 1 to ${NAME_MAX_CHARACTERS} characters, the permissions a list`;
    default:
      return `unexpected answer from the key service: status ${status}`;
  }
}

/**
 * Characters a terminal acts on, or shows as nothing or as another: controls (C0, C1, DEL); format
 * characters (bidi marks and overrides, zero-width ones, U+FEFF, tags); line and paragraph
 * separators; spaces other than U+0020; lone surrogates; and letters drawn blank (Hangul fillers,
 * the Braille blank, the invisible combining joiner and Khmer vowels).
 */
const UNPRINTABLE =
  /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u115f\u1160\u3164\uffa0\u2800]|\u034f|\u17b4|\u17b5/u;

/** The text with every unprintable character written as \\u escapes of its UTF-16 units (as JSON reads them). */
function printable(text: string): string {
  return text.replace(new RegExp(UNPRINTABLE.source, 'gu'), (char) =>
    Array.from({ length: char.length }, (_, i) => `\\u${char.charCodeAt(i).toString(16).padStart(4, '0')}`).join(''),
  );
}

/** Every string inside a key-service answer, printable. */
function printableDeep(value: unknown): unknown {
  if (typeof value === 'string') return printable(value);
  if (Array.isArray(value)) return value.map(printableDeep);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([name, inner]) => [printable(name), printableDeep(inner)]));
  }
  return value;
}

/** Rows as columns, each padded to its widest cell. */
function table(rows: readonly string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

const commaList = (text: string): string[] => text.split(',').flatMap((part) => part.trim() || []);

const keyState = (key: Key) =>
  key.revokedAt !== null ? 'revoked' : Date.parse(key.expiresAt) <= Date.now() ? 'expired' : 'active';

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const writeTo = (stream: NodeJS.WriteStream) => (line: string) => void stream.write(`${line}\n`);
  const output = { out: writeTo(process.stdout), err: writeTo(process.stderr) };
  process.exitCode = await runKeysCli(process.argv.slice(2), output).catch((err: unknown) => {
    output.err(printable(`keys: ${err instanceof Error ? err.message : String(err)}`));
    return 1;
  });
}
