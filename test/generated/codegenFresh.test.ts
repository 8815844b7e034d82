import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { generate, loadCodegenConfig } from '@graphql-codegen/cli';
import { Kind, parse } from 'graphql';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('generated platform documents', () => {
  it('src/generated matches what codegen.yml generates from queries/ now (run `npm run codegen`)', async () => {
    // The CLI's own loader reads codegen.yml exactly as `npm run codegen` does; nothing is written.
    const { config } = await loadCodegenConfig({ configFilePath: `${ROOT}codegen.yml` });
    const outputs: Array<{ filename: string; content: string }> = await generate(
      { ...config, cwd: ROOT, silent: true, verbose: false, watch: false },
      false,
    );
    const targets = Object.keys(config.generates);
    assert.ok(targets.length > 0, 'codegen.yml generates nothing');
    for (const target of targets) {
      const output = outputs.find((o) => o.filename === target || o.filename === `${ROOT}${target}`);
      assert.ok(output, `codegen produced no ${target}`);
      const committed = readFileSync(`${ROOT}${target}`, 'utf8');
      assert.ok(committed === output.content, `${target} is stale: run \`npm run codegen\` and commit the result`);
    }
  });

  it('each queries/*.graphql holds exactly one operation', () => {
    const files = readdirSync(`${ROOT}queries`).filter((name) => name.endsWith('.graphql'));
    assert.ok(files.length >= 4);
    for (const file of files) {
      const document = parse(readFileSync(`${ROOT}queries/${file}`, 'utf8'));
      const operations = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
      assert.equal(operations.length, 1, file);
      assert.equal(
        operations[0]?.kind === Kind.OPERATION_DEFINITION && operations[0].name?.value,
        file.replace(/\.graphql$/, ''),
      );
    }
  });
});
