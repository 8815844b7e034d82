import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError, KeyCliEnvSchema, problemLines, processEnvironment, type UpstreamTarget } from '../config.js';
import { DataDirBusy, runningEndpoint } from './dataDirFiles.js';
import {
  type Actor,
  createKey,
  KeyManagementRefusal,
  type KeyServiceTarget,
  listKeys,
  revokeKey,
} from './keyManagementClient.js';
import { DAY_MS, type Key, MAX_LIFETIME_DAYS } from './keyStore.js';
import { startLocalKeyService } from './localKeyService.js';
import { LOCAL_OWNER_ID } from './seedAccounts.js';

/**
 * `npm run keys -- create|list|revoke ...`: key management over the key service's HTTP
 * contract. With KEY_SERVICE_URL (and KEY_SERVICE_TOKEN) set it talks to that service;
 * otherwise to the embedded stand-in: the running `npm start` (found through the endpoint it
 * writes into the data directory) or, when none runs, one started in this process over the
 * same data file. It acts as a local owner holding manage_api_keys unless told otherwise.
 */

/**
 * The permissions a key may carry (public-rest-v1.md 5.2) and what each grants. Any other
 * string is stored by the key service but grants nothing, so the CLI refuses it unless told.
 */
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
${Object.entries(KEY_PERMISSIONS)
  .map(([name, grants]) => `  ${name.padEnd(8)} ${grants}`)
  .join('\n')}`;

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

export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

class UsageError extends Error {}

/** Runs one command; answers the exit code (0 done, 1 refused or failed, 2 wrong usage). */
export async function runKeysCli(argv: readonly string[], output: CliOutput): Promise<number> {
  let action: ((target: KeyServiceTarget) => Promise<void>) | 'help';
  try {
    const { values, positionals } = parseCommandLine(argv);
    action = values.help || positionals[0] === 'help' ? 'help' : commandOf(values, positionals, output);
  } catch (err: unknown) {
    if (!(err instanceof UsageError)) throw err;
    output.err(`keys: ${err.message}`);
    output.err(USAGE);
    return 2;
  }
  if (action === 'help') {
    output.out(USAGE);
    return 0;
  }

  let config;
  try {
    config = loadKeyCliConfig();
  } catch (err: unknown) {
    if (!(err instanceof ConfigError)) throw err;
    for (const problem of err.problems) output.err(`keys: ${problem}`);
    return 2;
  }
  try {
    if (config.keyService) await action(config.keyService);
    else await withLocalKeyService(resolve(config.localDataDir), action);
    return 0;
  } catch (err: unknown) {
    if (!(err instanceof KeyManagementRefusal || err instanceof DataDirBusy)) throw err;
    output.err(`keys: ${err.message}`);
    return 1;
  }
}

/**
 * The key CLI's configuration: only KEY_SERVICE_URL / KEY_SERVICE_TOKEN (null: the local key
 * service) and LOCAL_DATA_DIR matter, so an operator can manage keys without naming a platform.
 */
export function loadKeyCliConfig(env: Readonly<Record<string, string | undefined>> = processEnvironment()): {
  keyService: UpstreamTarget | null;
  localDataDir: string;
} {
  const parsed = KeyCliEnvSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(problemLines(parsed.error));
  const { KEY_SERVICE_URL: url, KEY_SERVICE_TOKEN: token, LOCAL_DATA_DIR: localDataDir } = parsed.data;
  if (url && !token) throw new ConfigError(['KEY_SERVICE_TOKEN is required with KEY_SERVICE_URL']);
  return { keyService: url && token ? { url: url.replace(/\/+$/, ''), token } : null, localDataDir };
}

function parseCommandLine(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], allowPositionals: true, options: OPTIONS });
  } catch (err: unknown) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}
type Values = ReturnType<typeof parseCommandLine>['values'];

/** What the command line asks for, or a UsageError saying what is wrong with it. */
function commandOf(
  values: Values,
  positionals: string[],
  output: CliOutput,
): (target: KeyServiceTarget) => Promise<void> {
  const [command, ...rest] = positionals;
  if (command === undefined) throw new UsageError('a command is required: create, list or revoke');
  const org = values.org?.trim();
  if (!org) throw new UsageError('--org <id> is required');
  const actor: Actor = {
    id: values.actor.trim() || LOCAL_OWNER_ID,
    permissions: commaList(values['actor-permissions']),
  };
  const [keyId, ...extra] = command === 'revoke' ? rest : [undefined, ...rest];
  if (extra.length > 0) throw new UsageError(`unexpected argument: ${extra[0]}`);
  const print = (json: unknown, lines: () => string[]) => {
    for (const line of values.json ? [JSON.stringify(json, null, 2)] : lines()) output.out(line);
  };

  switch (command) {
    case 'create': {
      const { name } = values;
      if (name === undefined) throw new UsageError('create needs --name <name>');
      const permissions = commaList(values.permissions);
      const unknown = permissions.filter((permission) => !Object.hasOwn(KEY_PERMISSIONS, permission));
      if (permissions.length === 0)
        throw new UsageError('--permissions names no permission; a key without one grants nothing');
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
        print(created, () => [
          `Created key ${created.key.id} for ${org}`,
          `  name         ${created.key.name}`,
          `  prefix       ${created.key.prefix}`,
          `  permissions  ${created.key.permissions.join(',') || '(none)'}`,
          `  state        ${keyState(created.key)}`,
          `  expires      ${created.key.expiresAt}`,
          'The plaintext key is shown only now; store it safely:',
          created.plaintext,
        ]);
      };
    }
    case 'list':
      return async (target) => {
        const keys = await listKeys(target, actor, org);
        const row = (cells: string[]) => cells.map((cell, i) => cell.padEnd([30, 13, 8, 16, 25, 0][i] ?? 0)).join(' ');
        print({ keys }, () =>
          keys.length === 0
            ? [`${org} has no keys`]
            : [
                row(['ID', 'PREFIX', 'STATE', 'PERMISSIONS', 'EXPIRES', 'NAME']),
                ...keys.map((k) =>
                  row([k.id, k.prefix, keyState(k), k.permissions.join(',') || '-', k.expiresAt, k.name]),
                ),
              ],
        );
      };
    case 'revoke':
      if (!keyId) throw new UsageError('revoke needs the key id: revoke --org <id> <keyId>');
      return async (target) => {
        const key = await revokeKey(target, actor, { organizationId: org, keyId });
        print({ key }, () => [
          `Key ${key.id} (${key.prefix}) is revoked since ${key.revokedAt} by ${key.revokedBy}; it stays listed.`,
        ]);
      };
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

/** The running local key service of this data directory, or one started here for the call. */
async function withLocalKeyService(
  dataDir: string,
  action: (target: KeyServiceTarget) => Promise<void>,
): Promise<void> {
  const running = await runningEndpoint(dataDir);
  if (running) {
    try {
      return await action(running);
    } catch (err: unknown) {
      // A stale endpoint (its process died): nothing reached it, so start one here instead.
      if (!(err instanceof KeyManagementRefusal && err.connectionRefused)) throw err;
    }
  }
  const service = await startLocalKeyService({ dataDir, announce: false });
  try {
    await action(service);
  } finally {
    await service.close();
  }
}

function commaList(text: string): string[] {
  return text
    .trim()
    .split(/\s*,\s*/)
    .filter(Boolean);
}

function keyState(key: Key): 'active' | 'expired' | 'revoked' {
  if (key.revokedAt !== null) return 'revoked';
  return Date.parse(key.expiresAt) <= Date.now() ? 'expired' : 'active';
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const writeTo = (stream: NodeJS.WriteStream) => (line: string) => void stream.write(`${line}\n`);
  const output = { out: writeTo(process.stdout), err: writeTo(process.stderr) };
  process.exitCode = await runKeysCli(process.argv.slice(2), output).catch((err: unknown) => {
    output.err(`keys: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  });
}
