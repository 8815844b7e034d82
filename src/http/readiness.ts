import { context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ReadinessProbeDocument } from '../generated/graphql.js';
import type { PlatformClient } from '../platform/platformClient.js';
import { tracingOn } from '../telemetry/spans.js';
import { withDeadline } from '../upstream/deadline.js';

/**
 * Readiness means "this process can serve": not while it starts or drains. The shared dependencies are
 * probed and reported but never fail it: that would take the whole fleet out of its load balancer at
 * once, and callers would get the balancer's page instead of each instance's own answer.
 */

export type ReadinessProbe = () => Promise<boolean> | boolean;

/** starting: not listening yet; draining: a shutdown began (the balancer should stop sending). */
export type Phase = 'starting' | 'serving' | 'draining';

export type Readiness = ReturnType<typeof createReadiness>;

export interface ReadinessOptions {
  /** Longest a probe may take before it counts as failed. */
  readonly timeoutMs?: number;
  /** Reports younger than this are reused, so a flood of /readyz requests is no flood of upstream calls. */
  readonly maxAgeMs?: number;
  readonly now?: () => number;
  /** A dependency going down writes one line naming it and why (never a stack); one more when it is back. */
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
  readonly phase?: Phase;
}

/**
 * `report()` answers at once with the phase and each dependency as last probed (absent until probed),
 * and starts a probe when that is stale; `dependencies()` probes, concurrent calls sharing one run.
 */
export function createReadiness(probes: Readonly<Record<string, ReadinessProbe>>, options: ReadinessOptions = {}) {
  const { timeoutMs = 2000, maxAgeMs = 1000, now = () => performance.now() } = options;
  let phase: Phase = options.phase ?? 'starting';
  let checks: Readonly<Record<string, boolean>> = {};
  let checkedAt: number | undefined;
  let running: Promise<Readonly<Record<string, boolean>>> | undefined;

  async function run(): Promise<Readonly<Record<string, boolean>>> {
    const outcomes = await untraced(() =>
      Promise.all(
        Object.entries(probes).map(async ([name, probe]) => [name, await outcomeOf(probe, timeoutMs)] as const),
      ),
    );
    const next: Record<string, boolean> = {};
    for (const [name, outcome] of outcomes) {
      next[name] = outcome === 'ok';
      if (next[name] === checks[name]) continue;
      if (outcome !== 'ok') options.logger?.warn({ dependency: name, failure: outcome }, 'dependency down');
      else if (checks[name] === false) options.logger?.info({ dependency: name }, 'dependency back');
    }
    checks = next;
    return next;
  }

  const dependencies = (): Promise<Readonly<Record<string, boolean>>> => {
    if (checkedAt !== undefined && now() - checkedAt < maxAgeMs) return Promise.resolve(checks);
    running ??= run().finally(() => {
      checkedAt = now();
      running = undefined;
    });
    return running;
  };

  return {
    report(): { ready: boolean; phase: Phase; checks: Readonly<Record<string, boolean>> } {
      void dependencies();
      return { ready: phase === 'serving', phase, checks };
    },
    dependencies,
    serving(): void {
      if (phase === 'starting') phase = 'serving';
    },
    draining(): void {
      phase = 'draining';
    },
  };
}

/** A readiness with nothing to check, serving from the start (tests, and apps built without upstreams). */
export function alwaysReady(): Readiness {
  return createReadiness({}, { phase: 'serving' });
}

/** Ready while the platform answers a trivial query (queries/ReadinessProbe.graphql). */
export function platformProbe(platform: PlatformClient): ReadinessProbe {
  return async () => typeof (await platform.request(ReadinessProbeDocument, {})).__typename === 'string';
}

/** Probes run for balancers and scrapers every few seconds: their upstream calls are not traced. */
async function untraced<T>(work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  const { suppressTracing } = await import('@opentelemetry/core'); // loaded only with tracing on, like the SDK
  return context.with(suppressTracing(context.active()), work);
}

/** `ok`, or in a few words why not: the error's message only, never its stack. */
function outcomeOf(probe: ReadinessProbe, timeoutMs: number): Promise<string> {
  return withDeadline(timeoutMs, () => Promise.resolve().then(probe), 'readiness probe').then(
    (ok) => (ok === true ? 'ok' : 'failed'),
    (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : 'failed'),
  );
}
