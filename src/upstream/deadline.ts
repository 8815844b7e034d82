/** Work that ran past its deadline; named as AbortSignal.timeout's error is. */
export class DeadlineError extends Error {
  override readonly name = 'TimeoutError';
}

/**
 * Settles as `work` does, or rejects with DeadlineError `ms` after the start, whichever
 * comes first. The timer is cleared as soon as the work settles, so nothing fires for work
 * done in time; until then it keeps the process alive (a shutdown step waits out its
 * deadline rather than the process ending under it). The work is not cancelled:
 * each caller bounds its own (an upstream call through undici's own timeouts).
 */
export async function withDeadline<T>(ms: number, work: () => Promise<T>, what = 'work'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`${what}: not done within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work(), expired]);
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
