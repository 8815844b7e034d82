import { ReadinessProbeDocument } from '../generated/graphql.js';
import type { PlatformClient } from '../platform/platformClient.js';
import type { KeyServiceClient } from '../upstream/keyServiceClient.js';
import type { ReadinessProbe } from './readiness.js';

/** Ready while the platform answers a trivial query (queries/ReadinessProbe.graphql). */
export function platformProbe(platform: PlatformClient): ReadinessProbe {
  return async () => {
    const answer = await platform.request(ReadinessProbeDocument, {});
    return typeof answer.__typename === 'string';
  };
}

/**
 * Ready while the key service answers verify with our token (see KeyServiceClient.isReady).
 * (When the auth module follows the key service's event stream, "the stream is
 * connected" is an equally good probe and costs no call.)
 */
export function keyServiceProbe(keyService: KeyServiceClient): ReadinessProbe {
  return () => keyService.isReady();
}
