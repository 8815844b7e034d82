import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./fixtures/batchedLogLines.ts', import.meta.url));

/**
 * Runs the child. stdout: 'read' collects it; 'closed' closes the reading end at once, as
 * a log reader that went away; 'full' points it at /dev/full, a disk with no room.
 */
function runChild(
  lines: number,
  stdout: 'read' | 'closed' | 'full',
  waitMs = 0,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const out = stdout === 'full' ? openSync('/dev/full', 'w') : 'pipe';
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(lines), String(waitMs)], {
      stdio: ['ignore', out, 'pipe'],
    });
    if (typeof out === 'number') closeSync(out);
    let text = '';
    let errors = '';
    child.stderr?.on('data', (chunk: Buffer) => (errors += chunk.toString('utf8')));
    if (stdout === 'closed') child.stdout?.destroy();
    else child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the child did not exit within 10 s'));
    }, 10_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: text, stderr: errors });
    });
  });
}

describe('log lines written in batches', () => {
  it('writes every line still held in the batch when the process exits', async () => {
    const { code, stdout } = await runChild(5, 'read');
    assert.equal(code, 3);
    const numbers = stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { n: number }).n);
    assert.deepEqual(numbers, [1, 2, 3, 4, 5]);
  });

  it('exits with its own code when stdout has no reader any more', async () => {
    const { code } = await runChild(5, 'closed');
    assert.equal(code, 3);
  });

  it('goes on when stdout refuses the batch (a full disk), and says so once on stderr', async () => {
    // The wait lets the periodic flush meet the full disk before the exit does.
    const { code, stderr } = await runChild(5, 'full', 700);
    assert.equal(code, 3);
    const said = stderr.split('\n').filter((line) => line.includes('log lines cannot be written'));
    assert.equal(said.length, 1, stderr);
  });
});
