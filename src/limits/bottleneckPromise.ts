/**
 * bottleneck (2.19.5, the last release) recognizes its own Lua errors by their exact
 * message, 'SETTINGS_KEY_NOT_FOUND' and 'UNKNOWN_CLIENT', and then repairs itself:
 * it re-creates the limiter's keys after Redis lost them (restart, expiry) or
 * registers the instance again. Redis 7 prefixes those script errors with 'ERR ', so
 * the repair never runs and the limiter fails on every call until the process
 * restarts (SGrondin/bottleneck#219, the Redis 7 face of #118).
 *
 * bottleneck builds its promises with the Promise class it is given; this one
 * drops the prefix from exactly those two replies, so bottleneck's own repair runs.
 */
const PREFIXED_LOST_STATE = /^ERR (SETTINGS_KEY_NOT_FOUND|UNKNOWN_CLIENT)$/;

export class BottleneckPromise<T> extends Promise<T> {
  constructor(
    executor: (resolve: (value: T | PromiseLike<T>) => void, reject: (reason?: unknown) => void) => void,
  ) {
    super((resolve, reject) => executor(resolve, (reason?: unknown) => reject(withoutRedisPrefix(reason))));
  }
}

function withoutRedisPrefix(reason: unknown): unknown {
  if (reason instanceof Error && PREFIXED_LOST_STATE.test(reason.message)) {
    reason.message = reason.message.slice('ERR '.length);
  }
  return reason;
}
