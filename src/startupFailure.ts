import { DataDirBusy } from './local/dataDirFiles.js';

const CAUSES: Readonly<Record<string, string>> = {
  EADDRINUSE: 'the port is already in use (another process listens there)',
  EADDRNOTAVAIL: 'the address is not one of this machine’s (check HOST)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  ENOTFOUND: 'the host name does not resolve (check HOST)',
  EAI_AGAIN: 'the host name could not be resolved right now (check HOST and DNS)',
  EAI_FAIL: 'the host name does not resolve (check HOST)',
  EAFNOSUPPORT: 'this machine does not support that address family (check HOST)',
  EINVAL: 'the address is not valid (check HOST)',
};

/**
 * The one stderr line for a failure to start that the operator can fix (a busy port, an address not
 * on this machine, a locked data directory); null for anything else (a bug, left to surface with its stack).
 */
export function startupFailureLine(err: unknown, target: { host: string; port: number }): string | null {
  if (err instanceof DataDirBusy) return `cannot start: the data directory is locked: ${err.message}`;
  const failure = err as (NodeJS.ErrnoException & { port?: number }) | null | undefined;
  const code = failure?.code;
  if (code === undefined || !(code in CAUSES)) return null;
  const host = target.host.includes(':') ? `[${target.host}]` : target.host;
  // listen's error names the port that failed: the admin port's, when that one is busy.
  return `cannot listen on ${host}:${failure?.port ?? target.port}: ${CAUSES[code]} (${code})`;
}
