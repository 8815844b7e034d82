import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { build, stop } from 'esbuild';
import { BUILD_SCRIPT_ENTRIES, BUILD_SETTINGS } from './buildSettings.js';

/**
 * The bench child modules the gateway child needs besides src/: gatewayProcess.ts and
 * what it imports from test/bench (esbuild transforms file by file without following
 * imports, so each one is listed; a missing one fails the child's start loudly).
 */
export const GATEWAY_CHILD_ENTRIES = ['test/bench/gatewayProcess.ts', 'test/bench/childMessages.ts'] as const;

/** The tracing helpers with tracing compiled out (see the module). */
export const NO_TRACING_SPANS = 'test/bench/noTracingSpans.ts';

/**
 * Compiles the gateway as `npm run build` does (same esbuild settings, every src/ file)
 * together with its bench child, keeping the repository's layout under `outDir` so the
 * child's `../../src/...` imports resolve; `outDir` should sit inside the repository so
 * node_modules resolves too (the bench uses bench-results/build, gitignored).
 * Returns the compiled gatewayProcess.js, which plain node runs as npm start runs dist/.
 * `tracing: 'compiled-out'` replaces src/telemetry/spans.js with NO_TRACING_SPANS.
 */
export async function buildGateway(
  repo: string,
  outDir: string,
  options: { readonly tracing?: 'compiled-out' } = {},
): Promise<string> {
  rmSync(outDir, { recursive: true, force: true });
  try {
    await build({
      ...BUILD_SETTINGS,
      absWorkingDir: repo,
      entryPoints: [...BUILD_SCRIPT_ENTRIES, ...GATEWAY_CHILD_ENTRIES],
      outdir: outDir,
      outbase: '.',
    });
    if (options.tracing === 'compiled-out') {
      // The no-op module takes the place of spans.js: every importer gets it unchanged.
      await build({
        ...BUILD_SETTINGS,
        absWorkingDir: repo,
        entryPoints: [{ in: NO_TRACING_SPANS, out: 'src/telemetry/spans' }],
        outdir: outDir,
      });
    }
  } finally {
    // esbuild's service process would otherwise stay up beside the processes measured.
    await stop();
  }
  return join(outDir, 'test', 'bench', 'gatewayProcess.js');
}
