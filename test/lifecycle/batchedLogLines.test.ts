import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CHILD = fileURLToPath(new URL('./fixtures/batchedLogLines.ts', import.meta.url));

/** Runs the child; `closeStdout` closes the reading end at once, as a log reader that went away. */
function runChild(lines: number, closeStdout: boolean): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, String(lines)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    if (closeStdout) child.stdout.destroy();
    else child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('the child did not exit within 10 s'));
    }, 10_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout });
    });
  });
}

describe('log lines written in batches', () => {
  it('writes every line still held in the batch when the process exits', async () => {
    const { code, stdout } = await runChild(5, false);
    assert.equal(code, 3);
    const numbers = stdout
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { n: number }).n);
    assert.deepEqual(numbers, [1, 2, 3, 4, 5]);
  });

  it('exits with its own code when stdout has no reader any more', async () => {
    const { code } = await runChild(5, true);
    assert.equal(code, 3);
  });
});
