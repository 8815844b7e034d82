import type { Logger } from 'pino';
import { withDeadline } from '../upstream/deadline.js';

/**
 * Readiness: can this instance serve traffic right now? Each probe answers for one
 * upstream (platform, key service, Redis when configured). A probe that throws or
 * does not answer within the timeout counts as not ready; the check itself never
 * throws and never hangs.
 */

export type ReadinessProbe = () => Promise<boolean> | boolean;

export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, boolean>>;
}

export interface Readiness {
  check(): Promise<ReadinessReport>;
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
  /** A run with a failing check writes one line naming the checks and why (never a stack). */
  readonly logger?: Pick<Logger, 'warn'>;
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
  let last: { report: ReadinessReport; at: number } | undefined;
  let running: Promise<ReadinessReport> | undefined;

  async function run(): Promise<ReadinessReport> {
    const names = Object.keys(probes);
    const results = await Promise.all(names.map((name) => outcomeOf(probes[name], timeoutMs)));
    const checks: Record<string, boolean> = {};
    const failures: Record<string, string> = {};
    names.forEach((name, i) => {
      const outcome = results[i] ?? 'missing';
      checks[name] = outcome === 'ok';
      if (outcome !== 'ok') failures[name] = outcome;
    });
    const ready = Object.keys(failures).length === 0;
    if (!ready) options.logger?.warn({ checks, failures }, 'not ready');
    return { ready, checks };
  }

  return {
    check() {
      if (last !== undefined && now() - last.at < maxAgeMs) return Promise.resolve(last.report);
      running ??= run().then((report) => {
        last = { report, at: now() };
        running = undefined;
        return report;
      });
      return running;
    },
  };
}

/** A readiness with nothing to check: always ready (tests, and apps built without upstreams). */
export function alwaysReady(): Readiness {
  return { check: async () => ({ ready: true, checks: {} }) };
}

/** `ok`, or in a few words why not: the error's message only, never its stack. */
function outcomeOf(probe: ReadinessProbe | undefined, timeoutMs: number): Promise<string> {
  if (probe === undefined) return Promise.resolve('missing');
  return withDeadline(timeoutMs, () => Promise.resolve().then(probe), 'readiness probe').then(
    (ok) => (ok === true ? 'ok' : 'failed'),
    (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : 'failed'),
  );
}
