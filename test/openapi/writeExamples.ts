import { writeFile } from 'node:fs/promises';
import { examplesModule, recordExamples } from './recordExamples.js';

/** `npm run openapi:examples`: re-records the document's examples from the demo data. */
await writeFile(
  new URL('../../src/openapi/recordedExamples.ts', import.meta.url),
  examplesModule(await recordExamples()),
);
