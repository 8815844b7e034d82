/**
 * What the bench's child processes and the parent say to each other over the IPC
 * channel of child_process.fork. Children announce themselves once with `ready`,
 * answer `memory` requests with their own process.memoryUsage(), and stop on `stop`
 * (or when the parent goes away).
 */

export interface UpstreamsReady {
  readonly type: 'ready';
  readonly platform: { readonly url: string; readonly token: string };
  readonly keyService: { readonly url: string; readonly token: string };
  readonly demoKey: string;
}

export interface GatewayReady {
  readonly type: 'ready';
  readonly url: string;
  readonly pid: number;
}

/**
 * Calibration: bare Koa plus this many µs of busy work per request. It shows what share
 * of bare Koa's rate any server reaches on this machine when it does that much more per
 * request than Koa, whatever the work is (the figure the warm targets are about).
 */
export const CALIBRATION_WORK_MICROS = [10, 40] as const;

export interface BareServersReady {
  readonly type: 'ready';
  readonly nodeUrl: string;
  readonly koaUrl: string;
  /** Bare Koa doing a fixed amount of busy work per request: µs of work → URL (calibration). */
  readonly koaWithWorkUrls: Readonly<Record<number, string>>;
  /**
   * The bare proxy: node:http answering each request with the platform's answer to the
   * gateway's own platform call, made through undici (the cold floor: two HTTP exchanges, no other work).
   */
  readonly proxyUrl: string;
  /** The stack's proxy: Koa answering with the platform client's data from that same call (the cold floor on this stack). */
  readonly stackProxyUrl: string;
  /** SOFA over the platform's schema (sofaServer.ts): its base URL, the route's path added by `sofaPath`. */
  readonly sofaUrl: string;
}

/** One platform call, as the gateway sends it for the bench's URL. */
export interface PlatformCall {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface MemoryReport {
  readonly type: 'memory';
  readonly id: number;
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  /** process.cpuUsage(): user and system CPU time since the child started, µs. */
  readonly cpuUserMicros: number;
  readonly cpuSystemMicros: number;
  /** performance.eventLoopUtilization().active: ms the event loop has been busy since start. */
  readonly loopActiveMs: number;
}

export interface ChildFailed {
  readonly type: 'failed';
  readonly message: string;
}

export type ParentMessage =
  | { readonly type: 'memory'; readonly id: number }
  | { readonly type: 'stop' }
  /** Bare servers only: the bytes and content type to serve, and the platform call the bare proxy makes. */
  | {
      readonly type: 'serve';
      readonly body: string;
      readonly contentType: string;
      readonly platformCall: PlatformCall;
    };

export function isParentMessage(value: unknown): value is ParentMessage {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';
}

/** Sends the child's memory figures when asked; cheap enough to run under load. */
export function answerMemory(message: ParentMessage): void {
  if (message.type !== 'memory') return;
  const usage = process.memoryUsage();
  const cpu = process.cpuUsage();
  const report: MemoryReport = {
    type: 'memory',
    id: message.id,
    rss: usage.rss,
    heapUsed: usage.heapUsed,
    heapTotal: usage.heapTotal,
    external: usage.external,
    cpuUserMicros: cpu.user,
    cpuSystemMicros: cpu.system,
    loopActiveMs: performance.eventLoopUtilization().active,
  };
  process.send?.(report);
}

export function reportFailure(err: unknown): void {
  const failed: ChildFailed = {
    type: 'failed',
    message: err instanceof Error ? (err.stack ?? err.message) : String(err),
  };
  if (process.send) process.send(failed, () => process.exit(1));
  else process.exit(1);
}
