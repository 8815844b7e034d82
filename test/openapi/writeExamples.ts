import { writeFile } from 'node:fs/promises';
import { recordExamples } from './recordExamples.js';

/** `npm run openapi:examples`: re-records the document's examples from the demo data. */
await writeFile(
  new URL('../../src/openapi/recordedExamples.json', import.meta.url),
  `${JSON.stringify(await recordExamples(), null, 2)}\n`,
);
