import { createConfig, lintFromString } from '@redocly/openapi-core';
import { type RulesetDefinition, Spectral } from '@stoplight/spectral-core';
import { oas } from '@stoplight/spectral-rulesets';

/** One finding of a linter, in a line fit for an assertion message. */
export interface LintFinding {
  readonly linter: 'spectral' | 'redocly';
  readonly severity: string;
  readonly rule: string;
  readonly where: string;
  readonly message: string;
}

const SPECTRAL_SEVERITY = ['error', 'warn', 'info', 'hint'];

/** Spectral's `spectral:oas` ruleset: errors and warnings (info and hints are advice only). */
export async function spectralFindings(json: string): Promise<LintFinding[]> {
  const spectral = new Spectral();
  // The package's declared type of its own ruleset omits `extends`, which it does not need.
  const ruleset: RulesetDefinition = { extends: [[oas as RulesetDefinition, 'recommended']] };
  spectral.setRuleset(ruleset);
  const results = await spectral.run(json);
  return results
    .filter((result) => result.severity <= 1)
    .map((result) => ({
      linter: 'spectral',
      severity: SPECTRAL_SEVERITY[result.severity] ?? String(result.severity),
      rule: String(result.code),
      where: result.path.join('.'),
      message: result.message,
    }));
}

/** Redocly's `recommended` ruleset: errors and warnings. */
export async function redoclyFindings(json: string): Promise<LintFinding[]> {
  const config = await createConfig({ extends: ['recommended'] });
  const problems = await lintFromString({ source: json, absoluteRef: 'openapi.json', config });
  return problems
    .filter((problem) => problem.severity === 'error' || problem.severity === 'warn')
    .map((problem) => ({
      linter: 'redocly',
      severity: problem.severity,
      rule: problem.ruleId,
      where: problem.location.map((location) => location.pointer ?? '').join(', '),
      message: problem.message,
    }));
}
