import { z } from 'zod';

/** One successful public call, as `POST /v1/usage` takes it. `id` (a uuid) makes it idempotent. */
export interface UsageEvent {
  readonly id: string;
  readonly keyId: string;
  readonly organizationId: string;
  readonly route: string;
  /** RFC 3339, UTC. */
  readonly at: string;
}

export interface KeyEventHandlers {
  onEvent(event: KeyServiceEvent): void;
  /** The stream opened (true) or dropped (false); `detail` is for logs only. */
  onConnectionChange?(connected: boolean, detail: string): void;
}

export interface KeyEventStream {
  /** True while open and delivering bytes recently: only then are the events known to be complete. */
  isConnected(): boolean;
  close(): Promise<void>;
}

const time = z.string().pipe(z.coerce.date());

/** Any key with the hash, expired and revoked ones included; `ceiling` null means none. */
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

export const ErrorAnswerSchema = z.object({ error: z.string() });
export type Verification = z.output<typeof VerificationSchema>;

/** `accepted`: new events counted; `duplicates`: events the service already knew (sent before). */
export const UsageReceiptSchema = z.object({ accepted: z.number().int().min(0), duplicates: z.number().int().min(0) });
/** A stream event's data, with its event name as `type`. */
export const KeyServiceEventSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('key.revoked'),
    keyId: z.string(),
    keyHash: z.string().regex(/^[0-9a-f]{64}$/),
    organizationId: z.string(),
    revokedAt: z.string(),
  }),
  z.object({ type: z.literal('organization.updated'), organizationId: z.string() }),
  z.object({ type: z.literal('reset') }),
]);
export type KeyServiceEvent = z.output<typeof KeyServiceEventSchema>;

/** Undefined when not JSON: the schemas then reject it. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
