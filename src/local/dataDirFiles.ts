import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import type { UpstreamTarget } from '../config.js';

/** The embedded stand-in's data directory: the key service's files, its lock, its endpoint for `npm run keys`. */

export const DATA_FILE_NAME = 'key-service.json';
export const USAGE_LOG_NAME = 'key-service.usage-events.log';
const LOCK_FILE_NAME = 'key-service.lock';
const ENDPOINT_FILE_NAME = 'key-service.endpoint.json';

export class DataDirBusy extends Error {
  override name = 'DataDirBusy';
  constructor(dataDir: string, pid: number) {
    super(`another local key service (pid ${pid}) already uses ${dataDir}; stop it or choose another LOCAL_DATA_DIR`);
  }
}

/** Writes a file so a reader never sees half of it: a temp file in the same folder, then rename. */
export async function writeFileAtomically(path: string, text: string): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temp, text, { encoding: 'utf8', mode: 0o600 });
    await rename(temp, path);
  } catch (err: unknown) {
    await rm(temp, { force: true });
    throw err;
  }
}

/** The file's text, or null when there is no such file. */
export async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return null;
    throw err;
  }
}

const EndpointFile = z.object({ pid: z.number().int(), url: z.string(), token: z.string() });

/** The JSON file as `schema` says, or null when it is missing, unreadable or of another shape. */
async function readJson<T>(path: string, schema: z.ZodType<T>): Promise<T | null> {
  try {
    return schema.parse(JSON.parse((await readIfExists(path)) ?? 'null'));
  } catch {
    return null;
  }
}

/** Locks held by this process, so one process cannot open the same data twice either. */
const heldLocks = new Set<string>();

/** Takes the data directory for this process; a lock of a process that is gone is taken over. */
export async function lockDataDir(dataDir: string): Promise<{ release(): Promise<void> }> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const lockPath = resolve(dataDir, LOCK_FILE_NAME);
  if (heldLocks.has(lockPath)) throw new DataDirBusy(dataDir, process.pid);
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(lockPath, JSON.stringify({ pid: process.pid }), { flag: 'wx', mode: 0o600 });
      break;
    } catch (err: unknown) {
      if (errorCode(err) !== 'EEXIST') throw err;
      // No readable pid (-1): a lock half written by a process that died; taken over like a dead one's.
      const holder = (await readJson(lockPath, EndpointFile.pick({ pid: true })))?.pid ?? -1;
      if (attempt > 0 || (holder > 0 && holder !== process.pid && isAlive(holder))) {
        throw new DataDirBusy(dataDir, holder);
      }
      await rm(lockPath, { force: true });
    }
  }
  heldLocks.add(lockPath);
  return {
    async release() {
      heldLocks.delete(lockPath);
      await rm(lockPath, { force: true });
    },
  };
}

export async function announceEndpoint(dataDir: string, { url, token }: UpstreamTarget): Promise<void> {
  await writeFileAtomically(join(dataDir, ENDPOINT_FILE_NAME), JSON.stringify({ url, token, pid: process.pid }));
}

export async function withdrawEndpoint(dataDir: string): Promise<void> {
  await rm(join(dataDir, ENDPOINT_FILE_NAME), { force: true });
}

/** The endpoint of a local key service that is running now on this data directory, if any. */
export async function runningEndpoint(dataDir: string): Promise<UpstreamTarget | null> {
  const endpoint = await readJson(join(dataDir, ENDPOINT_FILE_NAME), EndpointFile);
  return endpoint && isAlive(endpoint.pid) ? { url: endpoint.url, token: endpoint.token } : null;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    // EPERM: it exists but belongs to someone else.
    return errorCode(err) === 'EPERM';
  }
}

/** The `code` of a Node.js system error (also of a cause a fetch failure wraps). */
export function errorCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
}
