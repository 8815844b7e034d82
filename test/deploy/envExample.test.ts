import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { z } from 'zod';
import { EnvSchema } from '../../src/config.js';
import { isSecretVariable } from './secretVariables.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/**
 * The tracing variables .env.example and the README document: the OpenTelemetry SDK reads
 * them itself, with its own defaults, whether or not src/config.ts also checks them.
 */
const READ_BY_OPENTELEMETRY_SDK = [
  'OTEL_EXPORTER_OTLP_ENDPOINT',
  'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_TRACES_EXPORTER',
  'OTEL_SERVICE_NAME',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_SDK_DISABLED',
];

interface Entry {
  readonly name: string;
  readonly value: string;
  /** The comment line right above it. */
  readonly meaning: string | undefined;
}

function entries(text: string): Entry[] {
  const lines = text.split('\n');
  return lines.flatMap((line, i) => {
    const match = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line);
    if (match === null) return [];
    const above = lines[i - 1];
    return [{ name: match[1] ?? '', value: match[2] ?? '', meaning: above?.startsWith('# ') ? above : undefined }];
  });
}

describe('.env.example', () => {
  const listed = entries(readFileSync(`${REPO}.env.example`, 'utf8'));
  const schema = EnvSchema.shape as Record<string, z.ZodType>;
  const gatewayVariables = Object.keys(schema).filter((name) => !READ_BY_OPENTELEMETRY_SDK.includes(name));

  it('lists every variable the gateway reads and the SDK group, each once, and nothing else', () => {
    const names = listed.map((entry) => entry.name);
    assert.deepEqual(
      names.filter((name, i) => names.indexOf(name) !== i),
      [],
      'listed twice',
    );
    assert.deepEqual(
      [...gatewayVariables, ...READ_BY_OPENTELEMETRY_SDK].filter((name) => !names.includes(name)),
      [],
      'missing from .env.example',
    );
    assert.deepEqual(
      names.filter((name) => !(name in schema) && !READ_BY_OPENTELEMETRY_SDK.includes(name)),
      [],
      'listed but read by nobody',
    );
  });

  it('gives each one line of meaning and its default; marks the secrets', () => {
    for (const { name, value, meaning } of listed) {
      assert.ok(meaning, `${name}: no comment line right above it`);
      assert.equal(
        meaning.includes('(secret)'),
        isSecretVariable(name),
        `${name}: (secret) marks exactly the credentials`,
      );
      const field = schema[name];
      if (field === undefined) continue;
      const fallback = field.parse(undefined);
      assert.deepEqual(field.parse(value), fallback, `${name}=${value} is not its default`);
      if (value === '' && fallback !== undefined)
        assert.match(meaning, /default/, `${name}: the line names the default`);
    }
  });

  it('every variable the gateway reads is in the README too', () => {
    const readme = readFileSync(`${REPO}README.md`, 'utf8');
    assert.deepEqual(
      gatewayVariables.filter((name) => !readme.includes(`\`${name}\``)),
      [],
    );
  });
});
