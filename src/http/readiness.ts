import { context } from '@opentelemetry/api';
import type { Logger } from 'pino';
import { tracingOn } from '../telemetry/spans.js';
import { withDeadline } from '../upstream/deadline.js';

/**
 * Readiness means "this process can serve": 503 while it starts and while it drains, 200
 * otherwise. The shared dependencies (platform, key service, Redis) are probed and
 * reported, but never fail it: they are shared by every instance, so failing readiness on
 * them would take the whole fleet out of its load balancer at once, and callers would get
 * the balancer's page instead of each instance's own answer (a cached 200, or an error in
 * the envelope with Retry-After).
 */

export type ReadinessProbe = () => Promise<boolean> | boolean;

/** starting: not listening yet; serving; draining: a shutdown began (the balancer should stop sending). */
export type Phase = 'starting' | 'serving' | 'draining';

export interface ReadinessReport {
  readonly ready: boolean;
  readonly phase: Phase;
  /** Each dependency's last known state; absent until its first probe has ended. */
  readonly checks: Readonly<Record<string, boolean>>;
}

export interface Readiness {
  /** At once, never waiting for a probe: the phase, and the dependencies as last probed (a stale report starts a new probe). */
  report(): ReadinessReport;
  /** Probes the dependencies (one shared run; a report younger than maxAgeMs is reused). */
  dependencies(): Promise<Readonly<Record<string, boolean>>>;
  serving(): void;
  draining(): void;
}

export interface ReadinessOptions {
  /** Longest a probe may take before it counts as failed. */
  readonly timeoutMs?: number;
  /**
   * A report younger than this is reused, and concurrent checks share one run, so a
   * flood of unauthenticated /readyz requests cannot become a flood of upstream calls.
   */
  readonly maxAgeMs?: number;
  readonly now?: () => number;
  /** A dependency that goes down writes one line naming it and why (never a stack); one more when it is back. */
  readonly logger?: Pick<Logger, 'warn' | 'info'>;
  /** Default 'starting'. */
  readonly phase?: Phase;
}

const DEFAULT_TIMEOUT_MS = 2000;
const DEFAULT_MAX_AGE_MS = 1000;

export function createReadiness(
  probes: Readonly<Record<string, ReadinessProbe>>,
  options: ReadinessOptions = {},
): Readiness {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const now = options.now ?? (() => performance.now());
  let phase: Phase = options.phase ?? 'starting';
  let checks: Readonly<Record<string, boolean>> = {};
  let checkedAt: number | undefined;
  let running: Promise<Readonly<Record<string, boolean>>> | undefined;

  async function run(): Promise<Readonly<Record<string, boolean>>> {
    const names = Object.keys(probes);
    const outcomes = await untraced(() => Promise.all(names.map((name) => outcomeOf(probes[name], timeoutMs))));
    const next: Record<string, boolean> = {};
    names.forEach((name, i) => {
      const outcome = outcomes[i] ?? 'missing';
      next[name] = outcome === 'ok';
      if (next[name] === checks[name]) return;
      if (outcome !== 'ok') options.logger?.warn({ dependency: name, failure: outcome }, 'dependency down');
      else if (checks[name] === false) options.logger?.info({ dependency: name }, 'dependency back');
    });
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

/** Probes run for balancers and scrapers, every few seconds: their upstream calls are not traced. */
async function untraced<T>(work: () => Promise<T>): Promise<T> {
  if (!tracingOn()) return work();
  // Loaded only with tracing on, like the rest of the SDK.
  const { suppressTracing } = await import('@opentelemetry/core');
  return context.with(suppressTracing(context.active()), work);
}

/** `ok`, or in a few words why not: the error's message only, never its stack. */
function outcomeOf(probe: ReadinessProbe | undefined, timeoutMs: number): Promise<string> {
  if (probe === undefined) return Promise.resolve('missing');
  return withDeadline(timeoutMs, () => Promise.resolve().then(probe), 'readiness probe').then(
    (ok) => (ok === true ? 'ok' : 'failed'),
    (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : 'failed'),
  );
}
