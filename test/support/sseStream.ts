import { createParser, type EventSourceMessage } from 'eventsource-parser';

export interface SseItem {
  kind: 'event' | 'comment';
  event?: string;
  id?: string;
  data: string;
}

export interface SseStream {
  readonly status: number;
  readonly contentType: string | null;
  /** The next event or comment that matches, waiting at most `waitMs` (a guard against hangs). */
  next(matches?: (item: SseItem) => boolean, waitMs?: number): Promise<SseItem>;
  /** Resolves when the server ends the stream (or close() aborts it). */
  readonly ended: Promise<void>;
  /** Everything received so far. */
  readonly received: readonly SseItem[];
  close(): void;
}

/** Opens a text/event-stream with fetch and parses it as it arrives. */
export async function openSseStream(url: string, headers: Record<string, string>): Promise<SseStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers, signal: controller.signal });
  const received: SseItem[] = [];
  let consumed = 0;
  const waiters = new Set<() => void>();
  const push = (item: SseItem) => {
    received.push(item);
    for (const wake of waiters) wake();
  };
  const parser = createParser({
    onEvent: (message: EventSourceMessage) =>
      push({
        kind: 'event',
        data: message.data,
        ...(message.event === undefined ? {} : { event: message.event }),
        ...(message.id === undefined ? {} : { id: message.id }),
      }),
    onComment: (comment: string) => push({ kind: 'comment', data: comment.trim() }),
  });
  const pump = (async () => {
    if (!response.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of response.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
    } catch {
      // Aborted by close(), or the server ended the stream.
    }
  })();

  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    received,
    ended: pump,
    next(matches = () => true, waitMs = 3000) {
      return new Promise<SseItem>((resolve, reject) => {
        const look = () => {
          while (consumed < received.length) {
            const item = received[consumed++] as SseItem;
            if (matches(item)) {
              finish();
              resolve(item);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no matching event within ${waitMs} ms; received ${JSON.stringify(received)}`));
        }, waitMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(look);
        };
        waiters.add(look);
        look();
      });
    },
    close() {
      controller.abort();
    },
  };
}
