import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ConfigError } from '../config.js';
import { DataDirBusy, runningEndpoint } from './dataDirFiles.js';
import { DAY_MS } from './dateText.js';
import { loadKeyCliConfig } from './keyCliConfig.js';
import {
  type Actor,
  createKey,
  KeyManagementRefusal,
  type KeyServiceTarget,
  listKeys,
  revokeKey,
} from './keyManagementClient.js';
import { describePermissions, unknownPermissions } from './keyPermissions.js';
import { type Key, MAX_LIFETIME_DAYS } from './keyStore.js';
import { startLocalKeyService } from './localKeyService.js';
import { LOCAL_OWNER_ID } from './seedAccounts.js';

/**
 * `npm run keys -- create|list|revoke ...`: key management over the key service's HTTP
 * contract. With KEY_SERVICE_URL (and the other upstream variables) set it talks to that
 * service; otherwise to the local one: the running `npm start` (found through the endpoint
 * it writes into the data directory) or, when none runs, one started in this process over
 * the same data file. It acts as a local owner holding manage_api_keys unless told otherwise.
 */

const USAGE = `Usage:
  npm run keys -- create --org <id> --name <name> [--permissions read,write] [--expires-in-days N]
  npm run keys -- list --org <id>
  npm run keys -- revoke --org <id> <keyId>
Options:
  --actor <userId>              the acting person (default ${LOCAL_OWNER_ID})
  --actor-permissions <list>    their organization permissions (default manage_api_keys)
  --data-dir <dir>              the local data directory (default LOCAL_DATA_DIR or .local)
  --allow-unknown-permissions   accept --permissions names other than those below (they grant nothing)
  --json                        print the key service's answer as JSON
Permissions (--permissions, default read):
${describePermissions()}`;

export interface CliOutput {
  out(line: string): void;
  err(line: string): void;
}

/** Runs one command; answers the exit code (0 done, 1 refused or failed, 2 wrong usage). */
export async function runKeysCli(
  argv: readonly string[],
  output: CliOutput,
  now: () => Date = () => new Date(),
): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        org: { type: 'string' },
        name: { type: 'string' },
        permissions: { type: 'string' },
        'expires-in-days': { type: 'string' },
        actor: { type: 'string' },
        'actor-permissions': { type: 'string' },
        'data-dir': { type: 'string' },
        json: { type: 'boolean' },
        'allow-unknown-permissions': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err: unknown) {
    return usageError(output, err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    output.out(USAGE);
    return values.help || command === 'help' ? 0 : 2;
  }
  const org = values.org?.trim();
  if (!org) return usageError(output, '--org <id> is required');
  const actor: Actor = {
    id: values.actor?.trim() || LOCAL_OWNER_ID,
    permissions: (values['actor-permissions'] ?? 'manage_api_keys')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
  };

  let action: (target: KeyServiceTarget) => Promise<void>;
  switch (command) {
    case 'create': {
      if (values.name === undefined) return usageError(output, 'create needs --name <name>');
      if (rest.length > 0) return usageError(output, `unexpected argument: ${rest[0]}`);
      const permissions = (values.permissions ?? 'read')
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean);
      const unknown = unknownPermissions(permissions);
      if (permissions.length === 0)
        return usageError(output, '--permissions names no permission; a key without one grants nothing');
      if (unknown.length > 0 && !values['allow-unknown-permissions']) {
        return usageError(
          output,
          `unknown permission ${unknown.join(', ')}: a key with it could never use it (--allow-unknown-permissions to insist)`,
        );
      }
      const days = values['expires-in-days'];
      if (days !== undefined && !/^\d+$/.test(days.trim())) {
        return usageError(output, `--expires-in-days must be a whole number of days (1 to ${MAX_LIFETIME_DAYS})`);
      }
      const expiresAt =
        days === undefined ? undefined : new Date(now().getTime() + Number(days) * DAY_MS).toISOString();
      const name = values.name;
      action = async (target) => {
        const created = await createKey(target, actor, org, { name, permissions, ...(expiresAt ? { expiresAt } : {}) });
        if (values.json) return output.out(JSON.stringify(created, null, 2));
        output.out(`Created key ${created.key.id} for ${org}`);
        output.out(describeKey(created.key, now()));
        output.out('The plaintext key is shown only now; store it safely:');
        output.out(created.plaintext);
      };
      break;
    }
    case 'list': {
      if (rest.length > 0) return usageError(output, `unexpected argument: ${rest[0]}`);
      action = async (target) => {
        const keys = await listKeys(target, actor, org);
        if (values.json) return output.out(JSON.stringify({ keys }, null, 2));
        if (keys.length === 0) return output.out(`${org} has no keys`);
        output.out(
          [
            'ID'.padEnd(30),
            'PREFIX'.padEnd(13),
            'STATE'.padEnd(8),
            'PERMISSIONS'.padEnd(16),
            'EXPIRES'.padEnd(25),
            'NAME',
          ].join(' '),
        );
        for (const key of keys) {
          output.out(
            [
              key.id.padEnd(30),
              key.prefix.padEnd(13),
              keyState(key, now()).padEnd(8),
              (key.permissions.join(',') || '-').padEnd(16),
              key.expiresAt.padEnd(25),
              key.name,
            ].join(' '),
          );
        }
      };
      break;
    }
    case 'revoke': {
      const [keyId, ...extra] = rest;
      if (!keyId) return usageError(output, 'revoke needs the key id: revoke --org <id> <keyId>');
      if (extra.length > 0) return usageError(output, `unexpected argument: ${extra[0]}`);
      action = async (target) => {
        const key = await revokeKey(target, actor, org, keyId);
        if (values.json) return output.out(JSON.stringify({ key }, null, 2));
        output.out(
          `Key ${key.id} (${key.prefix}) is revoked since ${key.revokedAt} by ${key.revokedBy}; it stays listed as the audit record.`,
        );
      };
      break;
    }
    default:
      return usageError(output, `unknown command ${JSON.stringify(command)}`);
  }

  let config;
  try {
    config = loadKeyCliConfig();
  } catch (err: unknown) {
    if (err instanceof ConfigError) {
      for (const problem of err.problems) output.err(`keys: ${problem}`);
      return 2;
    }
    throw err;
  }
  try {
    if (config.keyService) await action(config.keyService);
    else await withLocalKeyService(resolve(values['data-dir'] ?? config.localDataDir), action);
    return 0;
  } catch (err: unknown) {
    if (err instanceof KeyManagementRefusal || err instanceof DataDirBusy) {
      output.err(`keys: ${err.message}`);
      return 1;
    }
    throw err;
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
    await action({ url: service.url, token: service.token });
  } finally {
    await service.close();
  }
}

function keyState(key: Key, now: Date): 'active' | 'expired' | 'revoked' {
  if (key.revokedAt !== null) return 'revoked';
  return Date.parse(key.expiresAt) <= now.getTime() ? 'expired' : 'active';
}

function describeKey(key: Key, now: Date): string {
  return [
    `  name         ${key.name}`,
    `  prefix       ${key.prefix}`,
    `  permissions  ${key.permissions.join(',') || '(none)'}`,
    `  state        ${keyState(key, now)}`,
    `  expires      ${key.expiresAt}`,
  ].join('\n');
}

function usageError(output: CliOutput, message: string): number {
  output.err(`keys: ${message}`);
  output.err(USAGE);
  return 2;
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href;
if (invokedDirectly) {
  runKeysCli(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  }).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`keys: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
