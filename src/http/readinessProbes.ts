import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { parse } from 'graphql';
import type { UpstreamFailure } from '../errors.js';
import type { PlatformClient } from '../platform/platformClient.js';
import type { ReadinessProbe } from './readiness.js';

/**
 * The cheapest question the platform can answer: fixed text, no variables, no data.
 * It goes through the platform client so it carries the service token and is timed
 * like every other call (operation `ReadinessProbe`).
 */
const READINESS_PROBE = parse('query ReadinessProbe { __typename }') as unknown as TypedDocumentNode<
  { __typename?: string },
  Record<string, never>
>;

/** Ready while the platform answers a trivial query. */
export function platformProbe(platform: PlatformClient): ReadinessProbe {
  return async () => {
    const answer = await platform.request(READINESS_PROBE, {});
    return typeof answer.__typename === 'string';
  };
}

export interface KeyServiceProbeOptions {
  /** KEY_SERVICE_URL without a trailing slash. */
  readonly url: string;
  readonly token: string;
  readonly timeoutMs: number;
  /** Same shape as GatewayMetrics.keyServiceCall (operation `probe`). */
  readonly onCall?: (operation: string, seconds: number, outcome: 'ok' | UpstreamFailure) => void;
}

/** A hash no key can have: the key service answers it 404 unknown_key without work. */
const NO_SUCH_KEY_HASH = '0'.repeat(64);

/**
 * Ready while the key service answers verify with our token: 404 (unknown key) or 200
 * mean it is up and accepts us; 401, 429, 5xx, a timeout or no connection mean it is not.
 * (When the auth module follows the key service's event stream, "the stream is
 * connected" is an equally good probe and costs no call.)
 */
export function keyServiceProbe(options: KeyServiceProbeOptions): ReadinessProbe {
  return async () => {
    const started = performance.now();
    let outcome: 'ok' | UpstreamFailure = 'ok';
    try {
      const response = await fetch(`${options.url}/v1/keys/verify`, {
        method: 'POST',
        headers: { authorization: `Bearer ${options.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ keyHash: NO_SUCH_KEY_HASH }),
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      await response.body?.cancel();
      if (response.status === 404 || response.status === 200) return true;
      outcome = response.status === 429 || response.status === 503 ? 'throttled' : 'bad_answer';
      return false;
    } catch (err: unknown) {
      outcome = err instanceof Error && err.name === 'TimeoutError' ? 'timeout' : 'unreachable';
      return false;
    } finally {
      options.onCall?.('probe', (performance.now() - started) / 1000, outcome);
    }
  };
}
