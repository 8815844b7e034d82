import { setTimeout as delay } from 'node:timers/promises';

/** Work that ran past its deadline; named as AbortSignal.timeout's error is. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Rejects with DeadlineError `ms` after the start unless `work` settled; the work is not cancelled. The
 * rejection waits for setImmediate: Node runs timers before it reads sockets, so an answer that arrived
 * while the event loop was busy is read first rather than refused.
 */
export async function withDeadline<T>(ms: number, work: () => Promise<T>, what = 'work'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => setImmediate(() => reject(new DeadlineError(`${what}: not done within ${ms} ms`))), ms);
  });
  try {
    return await Promise.race([work(), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined);
}
