import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';

/**
 * The local data directory (LOCAL_DATA_DIR, `.local` by default): the key service's data
 * file, a lock so only one process writes it, and the endpoint of the running local key
 * service so `npm run keys` can talk to it from another process.
 */

export const DATA_FILE_NAME = 'key-service.json';
export const USAGE_LOG_NAME = 'key-service.usage-events.log';
const LOCK_FILE_NAME = 'key-service.lock';
const ENDPOINT_FILE_NAME = 'key-service.endpoint.json';

export class DataDirBusy extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(`another local key service (pid ${pid}) already uses ${dataDir}; stop it or choose another LOCAL_DATA_DIR`);
    this.name = 'DataDirBusy';
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

/** Locks held by this process, so one process cannot open the same data twice either. */
const heldLocks = new Set<string>();

/** Takes the data directory for this process; a lock of a process that is gone is taken over. */
export async function lockDataDir(dataDir: string): Promise<{ release(): Promise<void> }> {
  await mkdir(dataDir, { recursive: true });
  const lockPath = resolve(dataDir, LOCK_FILE_NAME);
  if (heldLocks.has(lockPath)) throw new DataDirBusy(dataDir, process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const handle = await open(lockPath, 'wx', 0o600);
      await handle.writeFile(JSON.stringify({ pid: process.pid }));
      await handle.close();
      heldLocks.add(lockPath);
      return {
        async release() {
          heldLocks.delete(lockPath);
          await rm(lockPath, { force: true });
        },
      };
    } catch (err: unknown) {
      if (!isCode(err, 'EEXIST')) throw err;
      const holder = await pidIn(lockPath);
      if (holder !== null && holder !== process.pid && isAlive(holder)) throw new DataDirBusy(dataDir, holder);
      await rm(lockPath, { force: true });
    }
  }
  throw new DataDirBusy(dataDir, -1);
}

export interface Endpoint {
  readonly url: string;
  readonly token: string;
}

export async function announceEndpoint(dataDir: string, endpoint: Endpoint): Promise<void> {
  await writeFileAtomically(
    join(dataDir, ENDPOINT_FILE_NAME),
    JSON.stringify({ url: endpoint.url, token: endpoint.token, pid: process.pid }),
  );
}

export async function withdrawEndpoint(dataDir: string): Promise<void> {
  await rm(join(dataDir, ENDPOINT_FILE_NAME), { force: true });
}

/** The endpoint of a local key service that is running now on this data directory, if any. */
export async function runningEndpoint(dataDir: string): Promise<Endpoint | null> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dataDir, ENDPOINT_FILE_NAME), 'utf8'));
  } catch {
    return null;
  }
  if (typeof parsed !== 'object' || parsed === null) return null;
  const { url, token, pid } = parsed as Record<string, unknown>;
  if (typeof url !== 'string' || typeof token !== 'string' || typeof pid !== 'number' || !isAlive(pid)) return null;
  return { url, token };
}

async function pidIn(path: string): Promise<number | null> {
  try {
    const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
    const pid = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>).pid : null;
    return typeof pid === 'number' ? pid : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    // EPERM: it exists but belongs to someone else.
    return isCode(err, 'EPERM');
  }
}

export function isCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}
