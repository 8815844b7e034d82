/** One successful public call, as the key service's `POST /v1/usage` takes it. */
export interface UsageEvent {
  /** A UUID: sending the event again never counts it twice. */
  readonly id: string;
  readonly keyId: string;
  readonly organizationId: string;
  readonly route: string;
  /** RFC 3339, UTC. */
  readonly at: string;
}

/** Where batches of events go: the key service client's recordUsage. Throws when not recorded. */
export interface UsageSink {
  recordUsage(events: readonly UsageEvent[]): Promise<{ accepted: number; duplicates: number }>;
}
