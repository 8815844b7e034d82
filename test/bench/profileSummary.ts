/**
 * Self time by function (and by module) from a V8 .cpuprofile, as written by
 * `node --cpu-prof`: where the gateway's CPU went, without opening DevTools.
 */

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly hitCount?: number;
  readonly children?: readonly number[];
}

export interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples?: readonly number[];
  readonly timeDeltas?: readonly number[];
  readonly startTime: number;
  readonly endTime: number;
}

export interface SelfTime {
  readonly name: string;
  readonly ms: number;
  readonly share: number;
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly byFunction: SelfTime[];
  readonly byModule: SelfTime[];
  /** Time with the function anywhere on the stack (self + callees), project functions (src/) only. */
  readonly inclusiveProject: SelfTime[];
}

/** The profile's nodes by id, each node's parent, and each node's self time in µs. */
function indexProfile(profile: CpuProfile) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the gap to the next sample.
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, deltas[i + 1] ?? 0));
  }
  return { nodes, parents, selfUs };
}

export function summarizeProfile(profile: CpuProfile, top = 30): ProfileSummary {
  const { nodes, parents, selfUs } = indexProfile(profile);
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const frame = nodes.get(id)?.callFrame;
    if (!frame) continue;
    totalUs += us;
    const fn = functionKey(frame);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const module = moduleOf(frame.url, frame.functionName);
    byModule.set(module, (byModule.get(module) ?? 0) + us);
    // Each project function on this stack gets the time once (recursion is not counted twice).
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parents.get(at)) {
      const onStack = nodes.get(at)?.callFrame;
      if (!onStack || !/\/src\//.test(onStack.url)) continue;
      const key = functionKey(onStack);
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    }
  }
  const rank = (table: Map<string, number>): SelfTime[] =>
    [...table.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: us / 1000, share: totalUs > 0 ? us / totalUs : 0 }));
  return {
    totalMs: totalUs / 1000,
    byFunction: rank(byFunction),
    byModule: rank(byModule),
    inclusiveProject: rank(inclusive),
  };
}

function functionKey(frame: ProfileNode['callFrame']): string {
  return `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
}

export function formatSummary(summary: ProfileSummary): string {
  const lines = [`total sampled: ${summary.totalMs.toFixed(0)} ms`, '', 'self time by module:'];
  for (const row of summary.byModule)
    lines.push(`  ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.ms.toFixed(0).padStart(7)} ms  ${row.name}`);
  lines.push('', 'self time by function:');
  for (const row of summary.byFunction)
    lines.push(`  ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.ms.toFixed(0).padStart(7)} ms  ${row.name}`);
  lines.push('', 'total time (self + callees) of project functions:');
  for (const row of summary.inclusiveProject)
    lines.push(`  ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.ms.toFixed(0).padStart(7)} ms  ${row.name}`);
  return lines.join('\n');
}

/** The package (node_modules/<name>), the project file (src/…), node internals, or V8's own entries. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inPackage) return inPackage[1] as string;
  if (url.startsWith('node:')) return url;
  const project = /\/((?:src|test)\/.*)$/.exec(url);
  return project ? (project[1] as string) : shortUrl(url);
}

function shortUrl(url: string): string {
  const inPackage = /node_modules\/(.*)$/.exec(url);
  if (inPackage) return inPackage[1] as string;
  const project = /\/((?:src|test)\/.*)$/.exec(url);
  if (project) return project[1] as string;
  return url.replace(/^file:\/\//, '');
}

/** Node's bindings that enter the kernel for a file or socket (the log line's write, for one). */
const SYSTEM_CALLS = new Set(['writeString', 'writeBuffer', 'writeBuffers', 'writev', 'read', 'fsync']);

/** Koa and the packages it is made of (its router included): "Koa" in the per-request split. */
const KOA_PACKAGES =
  /^(koa|koa-compose|@koa\/router|delegates|on-finished|ee-first|mime-types|mime-db|statuses|http-errors|type-is|content-type|vary|accepts|negotiator|media-typer|fresh|encodeurl|escape-html|parseurl|only|cookies|keygrip|path-to-regexp|depd|destroy|setprototypeof|toidentifier|inherits|debug|ms|http-assert|deep-equal|koa-is-json|content-disposition|safe-buffer)$/;

export interface RequestWork {
  readonly requests: number;
  /** CPU per request by part, in µs: own (the gateway's code and the libraries it calls), Koa, Node, GC, other. */
  readonly microsPerRequest: Readonly<Record<'own' | 'koa' | 'node' | 'gc' | 'other', number>>;
  /** Of the own part, the time in system calls the gateway makes itself (the log line's write). */
  readonly ownSystemCallMicros: number;
  /** The own part by the innermost project file on the stack, µs per request, largest first. */
  readonly ownByFile: SelfTime[];
}

/**
 * Where a server's CPU went per request (idle left out), for the issue's measure of the
 * gateway's own work per cache hit: everything but Node's HTTP and Koa. A sample is
 * Koa's when its innermost frame is in Koa's packages; Node's when it is in Node's own
 * code or native with no project frame under it (the socket reads and writes, the HTTP
 * parser); GC's and V8's own entries apart; everything else is the gateway's own,
 * including Node calls the gateway makes itself (a header it sets, a UUID it draws) and
 * its libraries (pino, prom-client, lru-cache). Start-up is in the profile too, so the
 * figure errs on the high side. The profile samples wall time while the thread is not
 * idle, so a system call also holds the time the process waits to run again after it:
 * the own part's system calls are given apart.
 */
export function workPerRequest(profile: CpuProfile, requests: number, top = 12): RequestWork {
  const { nodes, parents, selfUs } = indexProfile(profile);
  const parts = { own: 0, koa: 0, node: 0, gc: 0, other: 0 };
  let ownSystemCalls = 0;
  const ownByFile = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const leaf = nodes.get(id)?.callFrame;
    if (!leaf || leaf.functionName === '(idle)') continue;
    if (leaf.functionName === '(garbage collector)') {
      parts.gc += us;
      continue;
    }
    if (!leaf.url && leaf.functionName.startsWith('(')) {
      parts.other += us;
      continue;
    }
    let projectFile: string | undefined;
    for (let at: number | undefined = id; at !== undefined && !projectFile; at = parents.get(at)) {
      const url = nodes.get(at)?.callFrame.url ?? '';
      if (isProjectUrl(url)) projectFile = url.replace(/^.*\/(?:src|dist)\//, '');
    }
    const module = moduleOf(leaf.url, leaf.functionName);
    const inPackage = leaf.url.includes('node_modules/');
    if (inPackage && KOA_PACKAGES.test(module)) parts.koa += us;
    else if (projectFile || inPackage) {
      parts.own += us;
      if (!leaf.url && SYSTEM_CALLS.has(leaf.functionName)) ownSystemCalls += us;
      const file = projectFile ?? `(${module})`;
      ownByFile.set(file, (ownByFile.get(file) ?? 0) + us);
    } else parts.node += us;
  }
  const perRequest = (us: number) => (requests > 0 ? us / requests : 0);
  return {
    requests,
    microsPerRequest: {
      own: perRequest(parts.own),
      koa: perRequest(parts.koa),
      node: perRequest(parts.node),
      gc: perRequest(parts.gc),
      other: perRequest(parts.other),
    },
    ownSystemCallMicros: perRequest(ownSystemCalls),
    ownByFile: [...ownByFile.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: perRequest(us), share: parts.own > 0 ? us / parts.own : 0 })),
  };
}

export function formatRequestWork(work: RequestWork): string {
  const { own, koa, node, gc, other } = work.microsPerRequest;
  const lines = [
    `CPU per request over ${work.requests} requests (µs): own ${own.toFixed(1)} ` +
      `(${work.ownSystemCallMicros.toFixed(1)} of it in system calls), Koa ${koa.toFixed(1)}, ` +
      `Node ${node.toFixed(1)}, GC ${gc.toFixed(1)}, V8 other ${other.toFixed(1)}`,
    'own work by project file (µs per request):',
  ];
  for (const row of work.ownByFile) lines.push(`  ${row.ms.toFixed(2).padStart(6)}  ${row.name}`);
  return lines.join('\n');
}

/** The project's own code: src/ under tsx, dist/ as esbuild built it, never a package. */
function isProjectUrl(url: string): boolean {
  return !url.includes('node_modules/') && /\/(src|dist)\//.test(url);
}
