import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { UsageEvent } from './usageEvent.js';

/**
 * Usage events that could not be delivered before a shutdown, kept in files until an
 * instance started with the same folder delivers them. Each event keeps its id, so the
 * key service counts it once however many times it is sent.
 *
 * A file is written under a temporary name and renamed, so a reader never sees half of
 * one; an instance claims a file by renaming it to its own pid before reading, so two
 * instances starting together never both deliver it. A claim left by a process that no
 * longer runs (killed while delivering) is taken over.
 */

export interface SpooledEvents {
  readonly events: readonly UsageEvent[];
  /** Deletes the claimed files: call once every event was acknowledged. */
  delivered(): Promise<void>;
}

export interface UsageSpool {
  /** Writes the events to a new file; rejects when the folder cannot be written. */
  write(events: readonly UsageEvent[]): Promise<void>;
  /** Claims every file waiting in the folder and returns their events. */
  claim(): Promise<SpooledEvents>;
}

const SPOOLED = /^usage-[\w-]+\.jsonl$/;
const CLAIMED = /^usage-[\w-]+\.jsonl\.claimed-(\d+)$/;

const SpooledEventSchema = z.object({
  id: z.string().min(1),
  keyId: z.string().min(1),
  organizationId: z.string().min(1),
  route: z.string().min(1),
  at: z.string().min(1),
});

export function createUsageSpool(dir: string): UsageSpool {
  return {
    async write(events) {
      await mkdir(dir, { recursive: true });
      const name = `usage-${Date.now()}-${process.pid}-${randomUUID()}.jsonl`;
      const temporary = join(dir, `.${name}.tmp`);
      await writeFile(temporary, `${events.map((event) => JSON.stringify(event)).join('\n')}\n`, { flush: true });
      await rename(temporary, join(dir, name));
    },

    async claim() {
      const names = await readdir(dir).catch((err: unknown) => {
        if (isMissing(err)) return [];
        throw err;
      });
      const claimed: string[] = [];
      for (const name of names) {
        const base = SPOOLED.test(name) ? name : abandonedClaim(name);
        if (base === null) continue;
        const mine = join(dir, `${base}.claimed-${process.pid}`);
        try {
          await rename(join(dir, name), mine);
          claimed.push(mine);
        } catch (err: unknown) {
          if (!isMissing(err)) throw err; // another instance claimed it first
        }
      }
      const events: UsageEvent[] = [];
      for (const file of claimed) events.push(...parseSpool(await readFile(file, 'utf8')));
      return {
        events,
        async delivered() {
          await Promise.all(claimed.map((file) => unlink(file)));
        },
      };
    },
  };
}

/** The spooled file's name when `name` is a claim of a process that is gone, else null. */
function abandonedClaim(name: string): string | null {
  const match = CLAIMED.exec(name);
  if (!match) return null;
  const pid = Number(match[1]);
  if (pid !== process.pid && isRunning(pid)) return null;
  return name.slice(0, name.lastIndexOf('.claimed-'));
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err: unknown) {
    return err instanceof Error && 'code' in err && err.code === 'EPERM';
  }
}

/** One event per line; a line that is not an event (a torn write) is skipped. */
export function parseSpool(text: string): UsageEvent[] {
  const events: UsageEvent[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
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

function isMissing(err: unknown): boolean {
  return err instanceof Error && 'code' in err && err.code === 'ENOENT';
}
