import { readFileSync } from 'node:fs';
import { type CpuProfile, formatSummary, summarizeProfile } from './profileSummary.js';

/** `node --import tsx test/bench/summarizeProfile.ts <file.cpuprofile> [top]` */
const [file, top] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node --import tsx test/bench/summarizeProfile.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
process.stdout.write(`${formatSummary(summarizeProfile(profile, top ? Number(top) : 30))}\n`);
