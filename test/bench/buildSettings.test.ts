import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BUILD_SCRIPT_ENTRIES, BUILD_SETTINGS, START_V8_FLAGS } from './buildSettings.js';

/** The esbuild command of package.json's `build` script: its entry, and its flags as JS API options. */
function buildScript(): { entries: string[]; options: Record<string, string | boolean | Record<string, string>> } {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const [command, ...words] = (pkg.scripts.build ?? '').split(/\s+/).filter((word) => word !== '');
  assert.equal(command, 'esbuild');
  const entries: string[] = [];
  const options: Record<string, string | boolean | Record<string, string>> = {};
  const loader: Record<string, string> = {};
  for (const word of words) {
    const load = /^--loader:(\.[a-z]+)=([a-z]+)$/.exec(word);
    if (load) {
      loader[load[1] ?? ''] = load[2] ?? '';
      options.loader = loader;
      continue;
    }
    const flag = /^--([a-z-]+)(?:=(.*))?$/.exec(word);
    if (!flag) {
      entries.push(word.replace(/^"|"$/g, ''));
      continue;
    }
    const name = (flag[1] ?? '').replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
    options[name] = flag[2] ?? true;
  }
  return { entries, options };
}

describe('bench build settings', () => {
  it('are the flags of the build script npm start runs, apart from where the output goes', () => {
    const { entries, options } = buildScript();
    const { outdir, outbase, ...transform } = options;
    assert.deepEqual(entries, [...BUILD_SCRIPT_ENTRIES]);
    assert.equal(outdir, 'dist');
    assert.equal(outbase, 'src');
    assert.deepEqual(transform, { ...BUILD_SETTINGS });
  });

  it('give the gateways the V8 flags of the start script', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.equal(pkg.scripts.start, `exec node --enable-source-maps ${START_V8_FLAGS.join(' ')} dist/main.js`);
  });
});
