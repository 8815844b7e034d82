import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The gateway compiled to plain JavaScript by tsc, so the bench can show what running
 * it without tsx would change (npm start runs it through tsx, whose module hooks live
 * in a thread of their own for the life of the process). Written under
 * bench-results/build (gitignored), inside the repository so node_modules resolves.
 * Returns the compiled gatewayProcess.js.
 */
export function compileGateway(repo: string): string {
  const buildDir = join(repo, 'bench-results', 'build');
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  writeFileSync(
    join(buildDir, 'tsconfig.json'),
    JSON.stringify({
      extends: '../../tsconfig.json',
      compilerOptions: { noEmit: false, outDir: '.', rootDir: '../..', sourceMap: true },
      include: ['../../src', '../../test/bench/gatewayProcess.ts'],
    }),
  );
  const tsc = join(repo, 'node_modules', 'typescript', 'bin', 'tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(buildDir, 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 });
  if (result.status !== 0) {
    throw new Error(`tsc failed (${result.error?.message ?? `exit ${result.status}`}): ${`${result.stdout}${result.stderr}`.slice(0, 2000)}`);
  }
  return join(buildDir, 'test', 'bench', 'gatewayProcess.js');
}
