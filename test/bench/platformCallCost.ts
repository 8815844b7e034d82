import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { MockAgent } from 'undici';
import { KeywordsDocument } from '../../src/generated/graphql.js';
import { PLATFORM_SHARES } from '../../src/platform/organizationShares.js';
import { createPlatformClient } from '../../src/platform/platformClient.js';
import { PLATFORM_ANSWER_MAX_BYTES } from '../../src/upstream/answerSizes.js';
import { createUpstreamHttp, routeUpstreamCalls } from '../../src/upstream/upstreamHttp.js';
import { startUpstreams } from './benchChild.js';
import { WARM_VARIABLES } from './benchSetup.js';
import { median, percentile } from './stats.js';

/**
 * `node --import tsx test/bench/platformCallCost.ts`: what one platform call costs the
 * gateway's process, apart from everything else a cold request does. The local platform runs
 * in a child process (as in `npm run bench`); this process makes the warm route's platform call
 * one at a time, in interleaved rounds, through
 * - `client`: the gateway's platform client (its typed document posted over undici, within the shares), and
 * - `transport`: the same POST through the client's transport alone (src/upstream/upstreamHttp.ts:
 *   undici, the answer read whole), its JSON parsed: the least a call costs here, so
 *   `client − transport` is what the client's body, answer reading and shares add.
 * Twice: over loopback to the platform, then with the platform's recorded answer given by
 * undici's MockAgent (no socket, no other process), where the figures are this process's own
 * work alone and move far less when the machine is shared.
 * It prints, per variant, the median over the rounds of this process's CPU µs per call and of
 * the calls' p50 time.
 */

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    calls: { type: 'string', default: '2000' },
  },
});
const ROUNDS = Number(args.rounds);
const CALLS = Number(args.calls);
const WARMUP_CALLS = 500;

const VARIANTS = ['client', 'transport'] as const;
type Variant = (typeof VARIANTS)[number];
type Calls = Record<Variant, () => Promise<unknown>>;

async function measure(title: string, calls: Calls): Promise<void> {
  const results: Record<Variant, { cpu: number[]; p50: number[] }> = {
    client: { cpu: [], p50: [] },
    transport: { cpu: [], p50: [] },
  };
  for (const variant of VARIANTS) for (let i = 0; i < WARMUP_CALLS; i++) await calls[variant]();
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
    for (const variant of order) {
      const times: number[] = [];
      const before = process.cpuUsage();
      for (let i = 0; i < CALLS; i++) {
        const started = performance.now();
        await calls[variant]();
        times.push(performance.now() - started);
      }
      const cpu = process.cpuUsage(before);
      results[variant].cpu.push((cpu.user + cpu.system) / CALLS);
      results[variant].p50.push(percentile(times, 50));
    }
  }
  process.stdout.write(`${title}\n`);
  for (const variant of VARIANTS) {
    const { cpu, p50 } = results[variant];
    const rounds = cpu.map((c) => c.toFixed(0)).join(' ');
    process.stdout.write(
      `  ${variant.padEnd(10)} ${median(cpu).toFixed(0).padStart(5)} µs CPU/call (rounds ${rounds})  p50 ${median(p50).toFixed(3)} ms\n`,
    );
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'platform-call-'));
  const upstreams = await startUpstreams(dataDir);
  try {
    const { url, token } = upstreams.ready.platform;
    const client = createPlatformClient({ url, token, timeoutMs: 5000 });
    const http = createUpstreamHttp({
      timeoutMs: 5000,
      connections: PLATFORM_SHARES.inFlight,
      maxAnswerBytes: PLATFORM_ANSWER_MAX_BYTES,
    });
    const body = JSON.stringify({ query: KeywordsDocument.toString(), variables: WARM_VARIABLES });
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const calls: Calls = {
      client: () => client.request(KeywordsDocument, WARM_VARIABLES),
      transport: async () => JSON.parse((await http.send(url, { method: 'POST', headers, body })).text),
    };
    process.stdout.write(`${ROUNDS} rounds × ${CALLS} calls per variant; medians over the rounds\n`);
    await measure('over loopback to the local platform:', calls);

    const recorded = await http.send(url, { method: 'POST', headers, body });
    const mock = new MockAgent();
    mock.disableNetConnect();
    const target = new URL(url);
    mock
      .get(target.origin)
      .intercept({ path: target.pathname, method: 'POST' })
      .reply(recorded.status, recorded.text, { headers: { 'content-type': 'application/json; charset=utf-8' } })
      .persist();
    const network = routeUpstreamCalls(() => mock);
    try {
      await measure("the platform's answer from undici's MockAgent (no socket):", calls);
    } finally {
      routeUpstreamCalls(network);
      await mock.close();
    }
  } finally {
    await upstreams.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
