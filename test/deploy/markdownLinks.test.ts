import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens. */
function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const withoutCode = markdown.replace(/```[\s\S]*?```/g, '');
  return new Set([...withoutCode.matchAll(/^#{1,6} (.+)$/gm)].map((match) => headingAnchor(match[1] ?? '')));
}

/** Every Markdown file git tracks (or would: untracked but not ignored). */
const MARKDOWN = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], {
  cwd: REPO,
  encoding: 'utf8',
})
  .split('\n')
  .filter((path) => path !== '' && existsSync(join(REPO, path)));

describe("the READMEs' links within the repository", () => {
  it('finds the READMEs', () => {
    for (const path of ['README.md', 'deploy/README.md', 'src/usage/README.md', 'test/bench/README.md'])
      assert.ok(MARKDOWN.includes(path), path);
  });

  it('each leads to a file that exists, and each #anchor to a heading there', () => {
    const broken: string[] = [];
    for (const path of MARKDOWN) {
      const text = readFileSync(join(REPO, path), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target)) continue; // https:, mailto:
        const [file = '', anchor] = target.split('#');
        const resolved = file === '' ? join(REPO, path) : join(REPO, dirname(path), file);
        if (!resolved.startsWith(REPO) || !existsSync(resolved)) {
          broken.push(`${path}: ${target} (no ${relative(REPO, resolved)})`);
          continue;
        }
        if (anchor !== undefined && !anchorsOf(readFileSync(resolved, 'utf8')).has(anchor))
          broken.push(`${path}: ${target} (no such heading)`);
      }
    }
    assert.deepEqual(broken, []);
  });
});
