import { z } from 'zod';

/**
 * The internal key service's contract (key-service.md): what its answers hold, as types
 * and as the zod schemas every answer is checked against before anything reads it.
 */

/** One successful public call, as `POST /v1/usage` takes it. `id` (a uuid) makes it idempotent. */
export interface UsageEvent {
  readonly id: string;
  readonly keyId: string;
  readonly organizationId: string;
  readonly route: string;
  /** RFC 3339, UTC. */
  readonly at: string;
}

export type KeyServiceEvent =
  | {
      readonly type: 'key.revoked';
      readonly keyId: string;
      readonly keyHash: string;
      readonly organizationId: string;
      readonly revokedAt: string;
    }
  | { readonly type: 'organization.updated'; readonly organizationId: string }
  | { readonly type: 'reset' };

export interface KeyEventHandlers {
  onEvent(event: KeyServiceEvent): void;
  /** The stream opened (true) or dropped (false); `detail` is for logs only. */
  onConnectionChange?(connected: boolean, detail: string): void;
}

export interface KeyEventStream {
  /** True while the stream is open and delivered bytes recently: only then are the events known to be complete. */
  isConnected(): boolean;
  /** Stops following; resolves once the connection and every timer are gone. */
  close(): Promise<void>;
}

const time = z
  .string()
  .refine((value) => !Number.isNaN(Date.parse(value)), 'not a time')
  .transform((value) => new Date(value));

/**
 * What `POST /v1/keys/verify` says about a hash: any key with it, expired and revoked ones
 * included; an organization's `ceiling` null means it has none.
 */
export const VerificationSchema = z.object({
  key: z.object({
    id: z.string().min(1),
    organizationId: z.string().min(1),
    prefix: z.string(),
    permissions: z.array(z.string()),
    expiresAt: time,
    revokedAt: time.nullable(),
  }),
  organization: z.object({
    id: z.string().min(1),
    plan: z.string(),
    usage: z.object({
      periodStart: time,
      periodEnd: time,
      used: z.number().int().min(0),
      ceiling: z.number().int().min(0).nullable(),
    }),
  }),
});

export const UnknownKeySchema = z.object({ error: z.literal('unknown_key') });
export type Verification = z.output<typeof VerificationSchema>;

/** `accepted`: new events counted; `duplicates`: events the service already knew (sent before). */
export const UsageReceiptSchema = z.object({ accepted: z.number().int().min(0), duplicates: z.number().int().min(0) });
export type UsageReceipt = z.output<typeof UsageReceiptSchema>;
export const KeyRevokedSchema = z.object({
  keyId: z.string(),
  keyHash: z.string().regex(/^[0-9a-f]{64}$/),
  organizationId: z.string(),
  revokedAt: z.string(),
});
export const OrganizationUpdatedSchema = z.object({ organizationId: z.string() });

/** A body as JSON, or undefined when it is not JSON (the schemas then reject it). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
