import { randomBytes } from 'node:crypto';

/**
 * The change events of the embedded stand-in for the key service, kept for replay: a client
 * reconnecting with `Last-Event-ID` gets what it missed within the retention window (10
 * minutes, as the contract says), or `reset` when the events after its id are gone (older than
 * the window, or from before a restart).
 */

export interface KeyEvent {
  readonly id: string;
  readonly type: 'key.revoked' | 'organization.updated' | 'reset';
  readonly data: Record<string, unknown>;
  readonly seq: number;
  readonly atMs: number;
}

const RETENTION_MS = 10 * 60_000;

export class KeyEventLog {
  /** Ids of this process's events start with it; any other id predates a restart. */
  private readonly bootId = randomBytes(4).toString('hex');
  private readonly events: KeyEvent[] = [];
  private seq = 0;
  /** The highest seq already dropped from the log. */
  private droppedThrough = 0;
  private readonly listeners = new Set<(event: KeyEvent) => void>();

  constructor(private readonly now: () => Date) {}

  append(type: 'key.revoked' | 'organization.updated', data: Record<string, unknown>): void {
    this.seq += 1;
    const event = { id: `${this.bootId}-${this.seq}`, type, data, seq: this.seq, atMs: this.now().getTime() };
    this.events.push(event);
    this.dropExpired();
    for (const listener of this.listeners) listener(event);
  }

  /** What a client that last saw `lastEventId` missed, or a reset when that cannot be told. */
  missedSince(lastEventId: string): KeyEvent[] {
    this.dropExpired();
    const match = /^([0-9a-f]+)-(\d+)$/.exec(lastEventId.trim());
    const seen = match && match[1] === this.bootId ? Number(match[2]) : null;
    if (seen === null || seen > this.seq || seen < this.droppedThrough) {
      // The reset carries the newest id, so reconnecting after it replays from here.
      return [{ id: `${this.bootId}-${this.seq}`, type: 'reset', data: {}, seq: this.seq, atMs: 0 }];
    }
    return this.events.filter((event) => event.seq > seen);
  }

  subscribe(listener: (event: KeyEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private dropExpired(): void {
    const oldestKept = this.now().getTime() - RETENTION_MS;
    while ((this.events[0]?.atMs ?? Infinity) < oldestKept) {
      this.droppedThrough = this.events.shift()?.seq ?? this.droppedThrough;
    }
  }
}

/** One event in text/event-stream form. */
export function toSseFrame(event: KeyEvent): string {
  return `id: ${event.id}\nevent: ${event.type}\ndata: ${JSON.stringify(event.data)}\n\n`;
}
