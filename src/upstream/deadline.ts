/** Work that ran past its deadline; named as AbortSignal.timeout's error is. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Runs `work` with a signal that aborts `ms` after the start, and settles at the
 * deadline even when the work ignores the signal (rejecting with DeadlineError).
 * The timer is cleared as soon as the work settles, so nothing fires for a call that
 * ended in time, and it never keeps the process alive on its own.
 */
export async function withDeadline<T>(ms: number, work: (signal: AbortSignal) => Promise<T>, what = 'work'): Promise<T> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const err = new DeadlineError(`${what}: not done within ${ms} ms`);
      reject(err);
      controller.abort(err);
    }, ms);
    timer.unref();
  });
  try {
    return await Promise.race([work(controller.signal), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves after `ms`, or at once when `signal` aborts; never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
