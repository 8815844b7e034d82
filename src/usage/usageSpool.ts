import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { UsageEvent } from './usageEvent.js';

export type UsageSpool = ReturnType<typeof createUsageSpool>;

/** How long a claim lives unless renewed. */
export const SPOOL_LEASE_MS = 30_000;
const SPOOLED = /^usage-[\w-]+\.jsonl$/;
const CLAIMED = /^(usage-[\w-]+\.jsonl)\.claimed-[\w-]+$/;

const SpooledEventSchema = z.object({
  id: z.string().min(1),
  keyId: z.string().min(1),
  organizationId: z.string().min(1),
  route: z.string().min(1),
  at: z.string().min(1),
});

/** Usage events not delivered before a shutdown, in files until an instance on the folder delivers them (README.md, "The spool"). */
export function createUsageSpool(dir: string, leaseMs = SPOOL_LEASE_MS) {
  const owner = randomUUID();
  /** What this process claimed, renewed until its events are safe. */
  const claims: Array<{ files: string[]; ids: Set<string> }> = [];
  const renewer = setInterval(() => {
    const at = new Date();
    // A file gone was taken over by an instance that thought this one dead: it delivers them too.
    for (const file of claims.flatMap((claim) => claim.files)) utimes(file, at, at).catch(() => undefined);
  }, leaseMs / 3);
  renewer.unref();

  /** These events are safe elsewhere (acknowledged, dropped, in Redis, spooled anew): a claim's files go once all are. */
  const safe = (events: readonly UsageEvent[]): void => {
    for (const claim of [...claims]) {
      for (const event of events) claim.ids.delete(event.id);
      if (claim.ids.size > 0) continue;
      claims.splice(claims.indexOf(claim), 1);
      for (const file of claim.files) unlink(file).catch(() => undefined);
    }
  };

  /** The spooled file's name when `name` is a file to claim: waiting, or a claim not renewed in time. */
  const claimable = async (name: string): Promise<string | null> => {
    if (SPOOLED.test(name)) return name;
    const base = CLAIMED.exec(name)?.[1];
    if (!base || name.endsWith(owner)) return null;
    const renewed = await stat(join(dir, name)).then(({ mtimeMs }): number | null => mtimeMs, unlessMissing(null));
    return renewed !== null && Date.now() - renewed >= leaseMs ? base : null;
  };

  return {
    leaseMs,
    /** Writes the events to a new file; rejects when the folder cannot be written. */
    async write(events: readonly UsageEvent[]): Promise<void> {
      // Private: each line names an organization, a key and a route.
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const name = `usage-${Date.now()}-${randomUUID()}.jsonl`;
      const temporary = join(dir, `.${name}.tmp`);
      await writeFile(temporary, `${events.map((event) => JSON.stringify(event)).join('\n')}\n`, {
        flush: true,
        mode: 0o600,
      });
      await rename(temporary, join(dir, name));
    },

    /** Claims every file waiting in the folder, and every abandoned claim: their events. */
    async claim(): Promise<UsageEvent[]> {
      const claimed: string[] = [];
      for (const name of await readdir(dir).catch(unlessMissing<string[]>([]))) {
        const base = await claimable(name);
        if (base === null) continue;
        const mine = join(dir, `${base}.claimed-${owner}`);
        // Renewed first: from the moment it bears this name, the claim is fresh.
        const at = new Date();
        const taken = await utimes(join(dir, name), at, at)
          .then(() => rename(join(dir, name), mine))
          .then(() => true, unlessMissing(false)); // another instance claimed it first
        if (taken) claimed.push(mine);
      }
      const events: UsageEvent[] = [];
      for (const file of claimed) events.push(...parseSpool(await readFile(file, 'utf8')));
      claims.push({ files: claimed, ids: new Set(events.map((event) => event.id)) });
      safe([]);
      return events;
    },

    safe,
  };
}

/** One event per line; a line that is not an event (a torn write) is skipped. */
function parseSpool(text: string): UsageEvent[] {
  const events: UsageEvent[] = [];
  for (const line of text.split('\n')) {
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = SpooledEventSchema.safeParse(json);
    if (parsed.success) events.push(parsed.data);
  }
  return events;
}

/** `fallback` when a file or folder is not there (any more); any other failure is thrown. */
function unlessMissing<T>(fallback: T): (err: unknown) => T {
  return (err) => {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') return fallback;
    throw err;
  };
}
