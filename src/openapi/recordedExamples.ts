import { createRequire } from 'node:module';

/**
 * Real answers over the demo data, recorded by `npm run openapi:examples` (re-record, never edit):
 * success bodies by operationId, failure bodies (the same on every route) by status, then by example name.
 */
export interface RecordedExamples {
  readonly success: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly failures: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

// Through require, as Node documents for JSON in ES modules: a JSON import warns on Node 20.
export const RECORDED_EXAMPLES: RecordedExamples = createRequire(import.meta.url)('./recordedExamples.json');
