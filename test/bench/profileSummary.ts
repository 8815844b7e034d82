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

export function summarizeProfile(profile: CpuProfile, top = 30): ProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  // A sample's time is the gap to the next sample.
  for (let i = 0; i < samples.length; i++) {
    const id = samples[i] as number;
    const us = deltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, us));
  }
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
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
