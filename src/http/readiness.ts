import { context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { ReadinessProbeDocument } from '../generated/graphql.js';
import type { PlatformClient } from '../platform/platformClient.js';
import { tracingOn } from '../telemetry/spans.js';
import { withDeadline } from '../upstream/deadline.js';

/**
 * Readiness means "this process can serve": 503 while it starts and while it drains, 200 otherwise.
 * The shared dependencies are probed and reported but never fail it: failing on them would take the
 * whole fleet out of its load balancer at once, and callers would get the balancer's page instead of
 * each instance's own answer (a cached 200, or an error in the envelope with Retry-After).
 */

export type ReadinessProbe = () => Promise<boolean> | boolean;

/** starting: not listening yet; draining: a shutdown began (the balancer should stop sending). */
export type Phase = 'starting' | 'serving' | 'draining';

export interface Readiness {
  /** At once: the phase, and each dependency as last probed (absent until probed; a stale report starts a probe). */
  report(): { readonly ready: boolean; readonly phase: Phase; readonly checks: Readonly<Record<string, boolean>> };
  /** Probes the dependencies: one shared run, and a report younger than maxAgeMs is reused. */
  dependencies(): Promise<Readonly<Record<string, boolean>>>;
  serving(): void;
  draining(): void;
}

export interface ReadinessOptions {
  /** Longest a probe may take before it counts as failed. Default 2 s. */
  readonly timeoutMs?: number;
  /** So a flood of unauthenticated /readyz requests cannot become a flood of upstream calls. Default 1 s. */
  readonly maxAgeMs?: number;
  readonly now?: () => number;
  /** A dependency going down writes one line naming it and why (never a stack); one more when it is back. */
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
  readonly phase?: Phase;
}

export function createReadiness(
  probes: Readonly<Record<string, ReadinessProbe>>,
  options: ReadinessOptions = {},
): Readiness {
  const timeoutMs = options.timeoutMs ?? 2000;
  const maxAgeMs = options.maxAgeMs ?? 1000;
  const now = options.now ?? (() => performance.now());
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

  const dependencies = () => {
    if (checkedAt !== undefined && now() - checkedAt < maxAgeMs) return Promise.resolve(checks);
    running ??= run().finally(() => {
      checkedAt = now();
      running = undefined;
    });
    return running;
  };

  return {
    report() {
      void dependencies();
      return { ready: phase === 'serving', phase, checks };
    },
    dependencies,
    serving() {
      if (phase === 'starting') phase = 'serving';
    },
    draining() {
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
