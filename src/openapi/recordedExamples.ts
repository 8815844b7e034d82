import { createRequire } from 'node:module';

/**
 * Real answers over the demo data, recorded by `npm run openapi:examples` into
 * recordedExamples.json (data: re-record it, never edit it): success bodies by operationId
 * then example name, and failure bodies (the same on every route) by status then example name.
 */
export interface RecordedExamples {
  readonly success: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly failures: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

// Read through require, as Node documents for JSON in ES modules: a JSON import would warn
// that it is experimental on Node 20.
export const RECORDED_EXAMPLES: RecordedExamples = createRequire(import.meta.url)('./recordedExamples.json');
