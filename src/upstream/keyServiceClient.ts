import { UpstreamError, type UpstreamFailure } from '../errors.js';
import { followEventStream, type KeyEventStreamOptions } from './keyEventFollower.js';
import {
  ErrorAnswerSchema,
  type KeyEventHandlers,
  type KeyEventStream,
  parseJson,
  UnknownKeySchema,
  type UsageEvent,
  type UsageReceipt,
  UsageReceiptSchema,
  type Verification,
  VerificationSchema,
} from './keyServiceContract.js';
import { failureFromStatus, failureFromThrown } from './upstreamFailure.js';
import { createUpstreamHttp } from './upstreamHttp.js';

/** The key service's calls (key-service.md); every failure is an UpstreamError, answered 503: auth fails closed. */
export interface KeyServiceClient {
  verify(keyHash: string): Promise<Verification | null>;
  /** Records 1 to 1000 usage events. A 400 throws UsageRejectedError: retrying cannot help. */
  recordUsage(events: readonly UsageEvent[]): Promise<UsageReceipt>;
  /** True while the service answers verify with our token. */
  isReady(): Promise<boolean>;
  followEvents(handlers: KeyEventHandlers): KeyEventStream;
}

export type KeyServiceCall = 'verify' | 'usage' | 'probe';

export interface KeyServiceClientOptions extends KeyEventStreamOptions {
  url: string;
  token: string;
  /** Per call; also the time allowed for the event stream to open. */
  timeoutMs: number;
  onCall?: (call: KeyServiceCall, seconds: number, outcome: 'ok' | UpstreamFailure) => void;
}

/** A usage batch the service refused as a whole (400): nothing of it was counted. */
export class UsageRejectedError extends UpstreamError {
  constructor(detail: string) {
    super('key-service', 'bad_answer', detail);
    this.name = 'UsageRejectedError';
  }
}

/** A hash no key can have: answered 404 without work. */
const NO_SUCH_KEY_HASH = '0'.repeat(64);

export function createKeyServiceClient(options: KeyServiceClientOptions): KeyServiceClient {
  const baseUrl = options.url.replace(/\/+$/, '');
  const authorization = `Bearer ${options.token}`;
  const http = createUpstreamHttp({ timeoutMs: options.timeoutMs });
  const headers = { authorization, 'content-type': 'application/json', accept: 'application/json' };

  /** One POST, 429/503 turned into throttled; `read` judges the rest. */
  async function post<T>(
    call: KeyServiceCall,
    path: string,
    body: unknown,
    read: (status: number, json: unknown) => T,
  ): Promise<T> {
    const started = performance.now();
    let outcome: 'ok' | UpstreamFailure = 'ok';
    try {
      const answer = await http.send(`${baseUrl}${path}`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (answer.status === 429 || answer.status === 503)
        throw failureFromStatus('key-service', call, answer.status, answer.headers['retry-after']);
      return read(answer.status, parseJson(answer.text));
    } catch (err: unknown) {
      const failure = failureFromThrown('key-service', call, err);
      outcome = failure.failure;
      throw failure;
    } finally {
      options.onCall?.(call, (performance.now() - started) / 1000, outcome);
    }
  }

  function verify(call: KeyServiceCall, keyHash: string): Promise<Verification | null> {
    return post(call, '/v1/keys/verify', { keyHash }, (status, json) => {
      if (status === 404 && UnknownKeySchema.safeParse(json).success) return null;
      if (status !== 200) throw failureFromStatus('key-service', call, status, null);
      const parsed = VerificationSchema.safeParse(json);
      if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', `${call}: answer of another form`);
      // The organization id on every platform query comes from this answer: it must agree with itself.
      if (parsed.data.key.organizationId !== parsed.data.organization.id) {
        throw new UpstreamError('key-service', 'bad_answer', `${call}: key and organization disagree`);
      }
      return parsed.data;
    });
  }

  return {
    verify: (keyHash) => verify('verify', keyHash),

    recordUsage(events) {
      return post('usage', '/v1/usage', { events }, (status, json) => {
        if (status === 400) {
          const name = ErrorAnswerSchema.safeParse(json).data?.error.slice(0, 100) ?? '';
          throw new UsageRejectedError(`usage: status 400 ${name}`.trim());
        }
        if (status !== 200) throw failureFromStatus('key-service', 'usage', status, null);
        const parsed = UsageReceiptSchema.safeParse(json);
        if (!parsed.success) throw new UpstreamError('key-service', 'bad_answer', 'usage: answer of another form');
        return parsed.data;
      });
    },

    isReady() {
      return verify('probe', NO_SUCH_KEY_HASH).then(
        () => true,
        () => false,
      );
    },

    followEvents(handlers) {
      return followEventStream(http, `${baseUrl}/v1/events`, authorization, options, handlers);
    },
  };
}
