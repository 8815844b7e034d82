import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildGateway, GATEWAY_CHILD_ENTRIES } from './compiledGateway.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

describe('bench gateway build', () => {
  let outDir: string;
  beforeEach(() => {
    outDir = mkdtempSync(join(tmpdir(), 'gateway-build-'));
  });
  afterEach(() => rmSync(outDir, { recursive: true, force: true }));

  it('compiles src/ and the gateway child in the repository layout, with source maps', async () => {
    const child = await buildGateway(REPO, outDir);
    assert.equal(child, join(outDir, 'test', 'bench', 'gatewayProcess.js'));
    for (const file of ['src/main.js', 'src/gateway.js', 'test/bench/gatewayProcess.js']) {
      assert.ok(existsSync(join(outDir, file)), file);
      assert.ok(existsSync(join(outDir, `${file}.map`)), `${file}.map`);
    }
    assert.match(readFileSync(child, 'utf8'), /^import .* from "\.\.\/\.\.\/src\/gateway\.js";$/m);
  });

  it('compiles every module the gateway child imports from test/bench', async () => {
    await buildGateway(REPO, outDir);
    for (const entry of GATEWAY_CHILD_ENTRIES) {
      const compiled = join(outDir, entry.replace(/\.ts$/, '.js'));
      const imports = [...readFileSync(compiled, 'utf8').matchAll(/from "(\.\.?\/[^"]+)"/g)].map(
        (match) => match[1] ?? '',
      );
      for (const specifier of imports)
        assert.ok(existsSync(resolve(dirname(compiled), specifier)), `${entry} → ${specifier}`);
    }
  });

  it('can replace the tracing helpers with their no-op version, and only them', async () => {
    await buildGateway(REPO, outDir);
    const traced = readFileSync(join(outDir, 'src', 'telemetry', 'spans.js'), 'utf8');
    const gateway = readFileSync(join(outDir, 'src', 'gateway.js'), 'utf8');
    await buildGateway(REPO, outDir, { tracing: 'compiled-out' });
    const untraced = readFileSync(join(outDir, 'src', 'telemetry', 'spans.js'), 'utf8');
    assert.match(traced, /startActiveSpan/);
    assert.doesNotMatch(untraced, /startActiveSpan/);
    assert.match(untraced, /SAME_EXPORTS/);
    assert.equal(readFileSync(join(outDir, 'src', 'gateway.js'), 'utf8'), gateway);
  });

  it('starts from an empty output directory, so no stale module survives a build', async () => {
    await buildGateway(REPO, outDir);
    const stale = join(outDir, 'src', 'removed.js');
    writeFileSync(stale, '');
    await buildGateway(REPO, outDir);
    assert.equal(existsSync(stale), false);
  });
});
