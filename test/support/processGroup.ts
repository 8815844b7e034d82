import { type ChildProcess, spawn } from 'node:child_process';

/**
 * A command started in a process group of its own (detached), as an operator's
 * supervisor runs it: the test can signal the whole group the way operators do, see
 * the output as it comes, and always clean up (SIGKILL to the group) even when a test
 * fails halfway.
 */

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ProcessGroup {
  readonly child: ChildProcess;
  /** The leader's pid, which is also the group id. */
  readonly pid: number;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first match of `pattern` in stdout (or stderr); rejects after `withinMs` or when the process ends first. */
  waitForOutput(pattern: RegExp, withinMs: number, stream?: 'stdout' | 'stderr'): Promise<RegExpExecArray>;
  readonly exited: Promise<Exit>;
  /** The exit, or null when the leader still runs after `ms`. */
  exitWithin(ms: number): Promise<Exit | null>;
  /** Whether any process of the group is still there. */
  groupAlive(): boolean;
  /** Sends a signal to every process of the group (nothing when none is left). */
  signalGroup(signal: NodeJS.Signals): void;
  /** For `after` hooks: SIGKILL to whatever is left of the group, then wait for the leader. */
  destroy(): Promise<void>;
}

export function startProcessGroup(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number },
): ProcessGroup {
  const child = spawn(command, [...args], {
    cwd: options.cwd,
    env: options.env,
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.gid }),
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${command} did not start`);
  let out = '';
  let err = '';
  const listeners = new Set<() => void>();
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    for (const listener of listeners) listener();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
    for (const listener of listeners) listener();
  });
  let ended: Exit | null = null;
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      ended = { code, signal };
      for (const listener of listeners) listener();
      resolve(ended);
    });
  });

  const groupAlive = (): boolean => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch (error: unknown) {
      if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
      throw error;
    }
  };
  const signalGroup = (signal: NodeJS.Signals): void => {
    try {
      process.kill(-pid, signal);
    } catch (error: unknown) {
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  };

  return {
    child,
    pid,
    stdout: () => out,
    stderr: () => err,
    waitForOutput(pattern, withinMs, stream = 'stdout') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = pattern.exec(stream === 'stdout' ? out : err);
          if (match) return finish(() => resolve(match));
          if (ended)
            finish(() =>
              reject(
                new Error(`${command} ended (${JSON.stringify(ended)}) before printing ${pattern}:\n${out}\n${err}`),
              ),
            );
        };
        const timer = setTimeout(
          () => finish(() => reject(new Error(`no ${pattern} from ${command} within ${withinMs} ms:\n${out}\n${err}`))),
          withinMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      });
    },
    exited,
    async exitWithin(ms) {
      let timer: NodeJS.Timeout | undefined;
      const result = await Promise.race([
        exited,
        new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), ms);
        }),
      ]);
      clearTimeout(timer);
      return result;
    },
    groupAlive,
    signalGroup,
    async destroy() {
      signalGroup('SIGKILL');
      await exited;
    },
  };
}
