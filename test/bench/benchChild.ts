import { type ChildProcess, fork } from 'node:child_process';
import { isAbsolute } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildFailed, MemoryReport, ParentMessage, UpstreamsReady } from './childMessages.js';

/** The parent's handle on one bench child process (forked with an IPC channel). */
export interface BenchChild<TReady> {
  readonly name: string;
  readonly process: ChildProcess;
  readonly ready: TReady;
  send(message: ParentMessage): void;
  /** The child's own process.memoryUsage(), or null when it does not answer within 1 s. */
  memory(): Promise<MemoryReport | null>;
  /** Asks it to stop (graceful), then kills it if it has not exited within `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export interface BenchChildOptions {
  readonly name: string;
  /** A file name under test/bench/, or an absolute path. */
  readonly module: string;
  /** 'tsx' (default): node --import tsx, for TypeScript modules; 'node': plain node, for esbuild's output (as npm start runs the gateway). */
  readonly runtime?: 'tsx' | 'node';
  readonly args?: readonly string[];
  /** The child's whole environment (nothing is inherited: the shell's variables never leak into a measurement). */
  readonly env: Record<string, string>;
  /** Extra node flags (e.g. --cpu-prof), before --import tsx when there is one. */
  readonly nodeFlags?: readonly string[];
  /** Where the child's stdout goes: a file descriptor, or 'ignore'. */
  readonly stdout: number | 'ignore';
  /** Sent once the channel is up, before waiting for `ready` (bare servers need their bytes). */
  readonly firstMessage?: ParentMessage;
  readonly readyTimeoutMs?: number;
}

const STDERR_KEPT = 4000;

export async function startBenchChild<TReady>(options: BenchChildOptions): Promise<BenchChild<TReady>> {
  const modulePath = isAbsolute(options.module)
    ? options.module
    : fileURLToPath(new URL(options.module, import.meta.url));
  const loader = options.runtime === 'node' ? [] : ['--import', 'tsx'];
  const child = fork(modulePath, [...(options.args ?? [])], {
    env: options.env,
    execArgv: [...(options.nodeFlags ?? []), '--enable-source-maps', ...loader],
    stdio: ['ignore', options.stdout, 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-STDERR_KEPT);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  const pendingMemory = new Map<number, (report: MemoryReport) => void>();
  let nextId = 1;
  child.on('message', (message: unknown) => {
    const report = message as MemoryReport;
    if (report?.type === 'memory') pendingMemory.get(report.id)?.(report);
  });

  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const ready = await new Promise<TReady>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${options.name}: not ready within ${readyTimeoutMs} ms\n${stderr}`)),
      readyTimeoutMs,
    );
    child.on('message', (message: unknown) => {
      const typed = message as { type?: string };
      if (typed?.type === 'ready') {
        clearTimeout(timer);
        resolve(message as TReady);
      } else if (typed?.type === 'failed') {
        clearTimeout(timer);
        reject(new Error(`${options.name} failed to start: ${(message as ChildFailed).message}`));
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${options.name} exited before it was ready (code ${code}, signal ${signal})\n${stderr}`));
    });
    if (options.firstMessage) child.send(options.firstMessage);
  }).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });

  return {
    name: options.name,
    process: child,
    ready,
    send(message) {
      if (child.connected) child.send(message);
    },
    memory() {
      if (!child.connected) return Promise.resolve(null);
      const id = nextId++;
      return new Promise<MemoryReport | null>((resolve) => {
        const timer = setTimeout(() => {
          pendingMemory.delete(id);
          resolve(null);
        }, 1000);
        pendingMemory.set(id, (report) => {
          clearTimeout(timer);
          pendingMemory.delete(id);
          resolve(report);
        });
        child.send({ type: 'memory', id } satisfies ParentMessage);
      });
    },
    async stop(graceMs = 8000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      if (child.connected) child.send({ type: 'stop' } satisfies ParentMessage);
      else child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const inTime = await Promise.race([
        exited.then(() => true),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!inTime) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** The local platform and key service, in one child, keeping their data in `dataDir`. */
export function startUpstreams(dataDir: string): Promise<BenchChild<UpstreamsReady>> {
  return startBenchChild<UpstreamsReady>({
    name: 'upstreams',
    module: './upstreamsProcess.ts',
    args: [dataDir],
    env: {},
    stdout: 'ignore',
  });
}
