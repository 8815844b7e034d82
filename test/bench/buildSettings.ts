import type { BuildOptions } from 'esbuild';

/**
 * How `npm run build` turns src/ into what `npm start` runs: the flags of package.json's
 * `build` script, written as esbuild's JS API options. It mirrors that script (which
 * cannot import this file) so the bench measures the gateway compiled the way production
 * runs it; buildSettings.test.ts fails when the two disagree.
 */
export const BUILD_SCRIPT_ENTRIES = ['src/**/*.ts', 'src/**/*.json', 'src/**/*.html', 'src/**/*.js'] as const;

export const BUILD_SETTINGS = {
  // Data files (the OpenAPI examples, the docs page and its script) are copied beside the modules that read them.
  loader: { '.json': 'copy', '.html': 'copy', '.js': 'copy' },
  platform: 'node',
  format: 'esm',
  target: 'node20',
  sourcemap: true,
  logLevel: 'warning',
} as const satisfies BuildOptions;

/**
 * The V8 flags of package.json's `start` script (after `--enable-source-maps`), given to
 * every gateway the bench runs as npm start does. buildSettings.test.ts checks the script.
 */
export const START_V8_FLAGS = ['--heap-growing-percent=50'] as const;
