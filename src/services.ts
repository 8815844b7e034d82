import type { Logger } from 'pino';
import type { Authenticator } from './auth/principal.js';
import type { AnswerCache } from './cache/createAnswerCache.js';
import type { Readiness } from './http/readiness.js';
import type { Admission } from './limits/admission.js';
import type { GatewayMetrics } from './metrics/gatewayMetrics.js';
import type { PlatformClient } from './platform/platformClient.js';
import type { UsageRecorder } from './usage/usageRecorder.js';

/** Everything a request may need, built once in gateway.ts (or by a test, with fakes) and handed to createApp. */
export interface Services {
  readonly logger: Logger;
  readonly now: () => Date;
  readonly authenticator: Authenticator;
  /** The request limit and the usage ceiling, claimed together after authentication. */
  readonly admission: Admission;
  readonly cache: AnswerCache;
  readonly usage: UsageRecorder;
  readonly platform: PlatformClient;
  /** Absent: a fresh registry. */
  readonly metrics?: GatewayMetrics;
  /** Absent: always ready. */
  readonly readiness?: Readiness;
  /** PUBLIC_BASE_URL, for the OpenAPI document's `servers`. Absent: `/`. */
  readonly publicBaseUrl?: string;
  /** TRUSTED_PROXY_HOPS. Absent: 0. */
  readonly trustedProxyHops?: number;
  /** Health, metrics and readiness are served by the admin listener (ADMIN_PORT). */
  readonly watchOnAdminPort?: boolean;
  /** How long refusals of callers without a valid key wait before they are sent. Absent: 0. */
  readonly refusalDelayMs?: number;
}
