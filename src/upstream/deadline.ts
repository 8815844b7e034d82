import { setTimeout as delay } from 'node:timers/promises';

/** Work that ran past its deadline; named as AbortSignal.timeout's error is. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Calls `expire` `ms` from now, after a setImmediate: Node runs timers before it reads sockets, so an
 * answer that arrived while the event loop was busy is read first rather than refused. Returns the cancel.
 */
export function atDeadline(ms: number, expire: () => void): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(expire);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
  };
}

export const deadlineError = (what: string, ms: number): DeadlineError =>
  new DeadlineError(`${what}: not done within ${ms} ms`);

/** Rejects with DeadlineError `ms` after the start (atDeadline) unless `work` settled; the work is not cancelled. */
export async function withDeadline<T>(ms: number, work: () => Promise<T>, what = 'work'): Promise<T> {
  let cancel: (() => void) | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    cancel = atDeadline(ms, () => reject(deadlineError(what, ms)));
  });
  try {
    return await Promise.race([work(), expired]);
  } finally {
    cancel?.();
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return delay(ms, undefined, signal ? { signal } : {}).catch(() => undefined);
}
