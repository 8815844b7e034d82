import autocannon from 'autocannon';

/** One bounded autocannon run against one URL. */
export interface LoadOptions {
  readonly url: string;
  readonly connections: number;
  readonly seconds: number;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /**
   * Keep every response time (ms, sub-millisecond resolution). autocannon's own
   * histogram holds whole milliseconds, too coarse for a sub-millisecond target.
   */
  readonly recordLatencies?: boolean;
}

export interface LoadResult {
  /** Completed responses, refusals included. */
  readonly requests: number;
  readonly seconds: number;
  /** Goodput: successful (2xx) answers per second. A refusal is quick to send and serves no one. */
  readonly requestsPerSecond: number;
  /** Responses outside 2xx, connection errors and timeouts: any of them spoils the run. */
  readonly non2xx: number;
  /** The responses outside 2xx by status (e.g. `{ 429: 12 }`), shown apart from the goodput. */
  readonly refusedByStatus: Readonly<Record<string, number>>;
  readonly errors: number;
  readonly timeouts: number;
  /** Response times in ms (only with recordLatencies), at most MAX_SAMPLES of them. */
  readonly latenciesMs: number[];
}

const MAX_SAMPLES = 500_000;
/** autocannon stops itself after `seconds`; this is the bound if it does not. */
const OVERRUN_MS = 10_000;

export function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latenciesMs: number[] = [];
  return new Promise<LoadResult>((resolve, reject) => {
    let overrun: NodeJS.Timeout | undefined;
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.seconds,
        method: options.method ?? 'GET',
        ...(options.headers ? { headers: options.headers } : {}),
        ...(options.body !== undefined ? { body: options.body } : {}),
        timeout: 10,
      },
      (err: unknown, result: autocannon.Result) => {
        clearTimeout(overrun);
        if (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
          return;
        }
        const seconds = result.duration > 0 ? result.duration : options.seconds;
        const refusedByStatus = Object.fromEntries(
          Object.entries(result.statusCodeStats ?? {})
            .filter(([status]) => !status.startsWith('2'))
            .map(([status, stats]) => [status, stats.count ?? 0]),
        );
        resolve({
          requests: result.requests.total,
          seconds,
          requestsPerSecond: result['2xx'] / seconds,
          non2xx: result.non2xx,
          refusedByStatus,
          errors: result.errors,
          timeouts: result.timeouts,
          latenciesMs,
        });
      },
    );
    if (options.recordLatencies) {
      instance.on('response', (_client, _status, _bytes, responseTime) => {
        if (latenciesMs.length < MAX_SAMPLES) latenciesMs.push(responseTime);
      });
    }
    overrun = setTimeout(() => instance.stop(), options.seconds * 1000 + OVERRUN_MS);
  });
}
