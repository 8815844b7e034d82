import { type ChildProcess, fork } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { FakeKeyService } from './fakeKeyService.js';
import { testKey, type VerifyAnswerOverrides, verifyAnswer } from './keys.js';

const DAY_MS = 86_400_000;

/** One organization with its own key, calling from its own loopback address (127.0.0.0/8 is all loopback). */
export interface Tenant {
  readonly organizationId: string;
  readonly key: string;
  readonly address: string;
}

/** Tenants alike: `count` keys named `name`, each its own organization unless `organizationId` names one for all. */
export interface TenantGroup {
  readonly name: string;
  readonly count: number;
  readonly organizationId?: string;
  /** The organizations' usage (default: no ceiling, in a period that ends in a month). */
  readonly usage?: VerifyAnswerOverrides['usage'];
  /** Where their addresses start: tenant n of the group calls from tenantAddress(firstAddress + n). */
  readonly firstAddress?: number;
}

/** The n-th address: one of 127.20.1.1 … 127.59.250.1, never a network or broadcast address. */
export const tenantAddress = (n: number): string => `127.${20 + Math.floor(n / 250)}.${(n % 250) + 1}.1`;

/** The group's tenants: keys and organizations follow from the names, so both sides of a test compute them alike. */
export function tenantsOf(group: TenantGroup): Tenant[] {
  return Array.from({ length: group.count }, (_, n) => ({
    organizationId: group.organizationId ?? `org_${group.name}_${n}`,
    key: testKey(`${group.name} ${n}`),
    address: tenantAddress((group.firstAddress ?? 0) + n),
  }));
}

/** Gives each tenant of the groups an active key on the key service: in memory, so thousands take milliseconds. */
export function seedTenants(keyService: FakeKeyService, groups: readonly TenantGroup[]): void {
  const now = Date.now();
  const expiresAt = new Date(now + 365 * DAY_MS).toISOString();
  const periodStart = new Date(now - DAY_MS).toISOString();
  const periodEnd = new Date(now + 30 * DAY_MS).toISOString();
  for (const group of groups) {
    for (const { key, organizationId } of tenantsOf(group)) {
      const usage = { ceiling: null, periodStart, periodEnd, ...group.usage };
      keyService.setAnswer(key, verifyAnswer(key, { key: { organizationId, expiresAt }, usage }));
    }
  }
}

/** What the upstreams counted, read from their process. */
export interface UpstreamCounts {
  readonly verifyCalls: number;
  /** Usage events counted (each id once), in all and by organization. */
  readonly usageEvents: number;
  readonly usageByOrganization: Record<string, number>;
  /** Events sent again after they were counted. */
  readonly usageDuplicates: number;
}

export interface TenantUpstreams {
  /** The four variables that point a gateway at them. */
  readonly env: Record<string, string>;
  /** A reader key of org_demo (no ceiling). */
  readonly key: string;
  counts(): Promise<UpstreamCounts>;
  /** The counts once `ready` holds of them (polled), or the last ones after `withinMs`. */
  countsOnce(ready: (counts: UpstreamCounts) => boolean, withinMs: number): Promise<UpstreamCounts>;
  setVerifyDelay(ms: number): Promise<void>;
  holdPlatform(hold: boolean): Promise<void>;
  refuseKeyService(status: number | null): Promise<void>;
  close(): Promise<void>;
}

export type UpstreamsCall =
  | { call: 'counts' }
  | { call: 'setVerifyDelay'; ms: number }
  /** The platform holds every answer (`hold`), or answers again. */
  | { call: 'holdPlatform'; hold: boolean }
  /** The key service answers this status to verify and usage (null: answers again). */
  | { call: 'refuseKeyService'; status: number | null }
  | { call: 'close' };
export type UpstreamsRequest = { id: number } & UpstreamsCall;

/**
 * A key service (verify taking `verifyDelayMs`) and a platform, in a process of their own so that the test's
 * clients and the upstreams do not share one event loop: each group's organizations have org_demo's sites.
 */
export async function startTenantUpstreams(
  groups: readonly TenantGroup[],
  verifyDelayMs: number,
): Promise<TenantUpstreams> {
  const child: ChildProcess = fork(fileURLToPath(new URL('./tenantUpstreamsChild.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let nextId = 1;
  const waiting = new Map<number, (result: unknown) => void>();
  type Started = { env: Record<string, string>; key: string };
  const ready = new Promise<Started>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`upstreams exited with ${code}`)));
    child.on('message', (message: { id?: number; started?: Started; result?: unknown }) => {
      if (message.started) resolve(message.started);
      else if (message.id !== undefined) waiting.get(message.id)?.(message.result);
    });
  });
  const ask = <T>(request: UpstreamsCall): Promise<T> => {
    const id = nextId++;
    return new Promise<T>((resolve) => {
      waiting.set(id, (result) => resolve(result as T));
      child.send({ ...request, id });
    });
  };
  child.send({ groups, verifyDelayMs });
  const { env, key } = await ready.catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
  return {
    env,
    key,
    counts: () => ask<UpstreamCounts>({ call: 'counts' }),
    async countsOnce(ready, withinMs) {
      const until = performance.now() + withinMs;
      for (;;) {
        const counts = await ask<UpstreamCounts>({ call: 'counts' });
        if (ready(counts) || performance.now() > until) return counts;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    setVerifyDelay: (ms) => ask<void>({ call: 'setVerifyDelay', ms }),
    holdPlatform: (hold) => ask<void>({ call: 'holdPlatform', hold }),
    refuseKeyService: (status) => ask<void>({ call: 'refuseKeyService', status }),
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await ask<void>({ call: 'close' }).catch(() => {});
      child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface TenantAnswer {
  /** 0: no HTTP answer (the connection failed). */
  readonly status: number;
  /** The error's reason, or what failed. */
  readonly reason: string | undefined;
  readonly fromGateway: boolean;
  readonly retryAfter: string | undefined;
  readonly ms: number;
}

/** One GET from the tenant's own address, on a connection of its own, with its key (or `key`). */
export function tenantGet(baseUrl: string, path: string, tenant: Tenant, key = tenant.key): Promise<TenantAnswer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const failed = (err: Error) =>
      resolve({ status: 0, reason: err.message, fromGateway: false, retryAfter: undefined, ms: 0 });
    const req = request(
      `${baseUrl}${path}`,
      { localAddress: tenant.address, agent: false, headers: { authorization: `Bearer ${key}` }, timeout: 30_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', failed);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            reason: /"reason":"(\w+)"/.exec(body)?.[1],
            fromGateway: (res.headers['content-type'] ?? '').startsWith('application/json'),
            retryAfter: res.headers['retry-after'],
            ms: performance.now() - started,
          });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
    req.on('error', failed);
    req.end();
  });
}

/** Counts of answers by `status reason` (`200` alone), for assertions and the run's log line. */
export function tally(answers: readonly TenantAnswer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const { status, reason, fromGateway } of answers) {
    const name = status === 200 ? '200' : `${status} ${fromGateway ? reason : `not the gateway: ${reason}`}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/** The p-th percentile (0–100) of the answers' durations. */
export function percentile(answers: readonly TenantAnswer[], p: number): number {
  const sorted = answers.map((answer) => answer.ms).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}
