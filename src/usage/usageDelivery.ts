import type { Logger } from 'pino';
import { inSpan } from '../telemetry/spans.js';
import { countByOrganization, type UsageEvent, type UsageSink } from './usageEvent.js';
import type { UsageLedger } from './usageLedger.js';

/**
 * What both usage buffers (in memory, and through Redis) do the same way when they deliver:
 * when the next look happens, what the ceiling ledger is told, and one call to the key service.
 */

/**
 * The one pending look of a buffer: at most one timer at a time. A look asked "soon" replaces
 * a waiting interval but never a backoff (a failing key service is not asked again early).
 */
export interface DeliveryTimer {
  /** Arms the timer unless one is armed or `canArm()` says no; `backoff` marks a wait after a failure. */
  schedule(delayMs: number, backoff: boolean): void;
  /** Looks at once, unless a backoff is running. */
  soon(): void;
  /** Forgets any armed timer, backoff included. */
  clear(): void;
}

export function createDeliveryTimer(options: {
  readonly look: () => void;
  /** False while a look is running or the buffer is stopped. */
  readonly canArm: () => boolean;
  /** Whether the timer keeps the process alive: only while closing, or a buffer would hold a process up by itself. */
  readonly keepsAlive: () => boolean;
}): DeliveryTimer {
  let armed: { handle: NodeJS.Timeout; backoff: boolean } | null = null;
  const timer: DeliveryTimer = {
    schedule(delayMs, backoff) {
      if (armed || !options.canArm()) return;
      const handle = setTimeout(() => {
        armed = null;
        options.look();
      }, delayMs);
      if (!options.keepsAlive()) handle.unref();
      armed = { handle, backoff };
    },
    soon() {
      if (armed && !armed.backoff) timer.clear();
      timer.schedule(0, false);
    },
    clear() {
      if (armed) clearTimeout(armed.handle);
      armed = null;
    },
  };
  return timer;
}

/** Tells the ceiling ledger, per organization, what became of these events. */
export function tellLedger(
  ledger: UsageLedger | undefined,
  events: readonly UsageEvent[],
  step: 'sending' | 'acknowledged' | 'dropped',
): void {
  if (!ledger) return;
  for (const [organizationId, calls] of Object.entries(countByOrganization(events)))
    ledger[step](organizationId, calls);
}

/** One call to the key service, traced; a receipt that does not add up is said, not fatal (ids make resends safe). */
export async function sendBatch(sink: UsageSink, events: readonly UsageEvent[], logger: Logger): Promise<void> {
  const receipt = await inSpan('usage.flush', () => sink.recordUsage(events), {
    root: true,
    attributes: { 'usage.events': events.length },
  });
  if (receipt.accepted + receipt.duplicates !== events.length) {
    logger.warn(
      { sent: events.length, accepted: receipt.accepted, duplicates: receipt.duplicates },
      'usage receipt does not add up to the batch sent',
    );
  }
}
