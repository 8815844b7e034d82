import { pino } from 'pino';
import { type Admission, type CallerUsage, LimiterUnavailable, type TrackedState } from '../../src/limits/admission.js';
import { FORGET_AFTER_MS } from '../../src/limits/idleOrganizations.js';
import { createLocalAdmission } from '../../src/limits/localAdmission.js';
import { createRedisAdmission } from '../../src/limits/redisAdmission.js';
import { createGatewayMetrics } from '../../src/metrics/gatewayMetrics.js';
import { closeRedis, connectRedis, redisReady } from '../../src/redis/connectRedis.js';

/**
 * Run as a process of its own by idleOrganizations.test.ts (`node --import tsx idleScenario.ts [redis url]`), so its
 * RSS is the admission's and not the test runner's: 20,000 organizations, half with a ceiling, each calling 3 times
 * over 10 minutes of a clock moved here, each call recorded and acknowledged as the delivery loop tells it; then
 * they stop and the clock moves past FORGET_AFTER_MS. Prints one JSON line: the peak RSS and the
 * `gateway_organizations_tracked` metric before and after.
 */

const ORGANIZATIONS = 20_000;
const CALLS_EACH = 3;
const MINUTES = 10;
const AT_ONCE = 50;

export interface IdleScenarioResult {
  readonly peakRssMb: number;
  readonly trackedAfterCalls: number;
  readonly trackedAfterIdle: number;
}

const periodEnd = new Date(Date.now() + 30 * 86_400_000);
const usageOf = (i: number): CallerUsage | undefined =>
  i % 2 === 0 ? { used: 1000, ceiling: 1_000_000, periodEnd, acknowledgedBefore: 0 } : undefined;

/** A take, asked again after a Redis slowed by a busy machine (503): what is measured here is what stays behind. */
async function take(admission: Admission, organizationId: string, nowMs: number, usage: CallerUsage | undefined) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await admission.take(organizationId, nowMs, usage);
    } catch (err: unknown) {
      if (!(err instanceof LimiterUnavailable) || attempt >= 20) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

async function run(redisUrl: string | undefined): Promise<IdleScenarioResult> {
  const clock = { now: Date.parse('2026-11-21T12:00:00.000Z') };
  const now = () => clock.now;
  const redis = redisUrl ? connectRedis({ kind: 'server', url: redisUrl }, pino({ level: 'silent' })) : undefined;
  const admission: Admission & TrackedState = redis
    ? createRedisAdmission({ requests: 600, windowSeconds: 60, redis, logger: pino({ level: 'silent' }), now })
    : createLocalAdmission({ requests: 600, windowSeconds: 60, now });
  while (redis && !redisReady(redis)) await new Promise((resolve) => setTimeout(resolve, 20));
  const metrics = createGatewayMetrics();
  metrics.observeOrganizationsTracked(admission.trackedOrganizations);
  const tracked = async () =>
    Number(/^gateway_organizations_tracked (\d+)$/m.exec((await metrics.exposition()).text)?.[1]);

  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);
  for (let minute = 0; minute < MINUTES; minute++) {
    clock.now += 60_000;
    // Organization i calls in minutes i, i + 3 and i + 6 (mod 10).
    const callers = Array.from({ length: ORGANIZATIONS }, (_, i) => i).filter((i) =>
      Array.from({ length: CALLS_EACH }, (_, k) => (i + 3 * k) % MINUTES).includes(minute),
    );
    for (let from = 0; from < callers.length; from += AT_ONCE) {
      await Promise.all(
        callers.slice(from, from + AT_ONCE).map(async (i) => {
          const organizationId = `org_${i}`;
          const grant = await take(admission, organizationId, clock.now, usageOf(i));
          if (!grant.allowed) throw new Error(`${organizationId} refused`);
          grant.keep();
          admission.ledger.sending(organizationId, 1);
          admission.ledger.acknowledged(organizationId, 1);
        }),
      );
    }
  }
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  const trackedAfterCalls = await tracked();
  clock.now += FORGET_AFTER_MS + 60_000;
  // The instance looks every second (by its timer) whether a minute of its clock has passed.
  for (const until = Date.now() + 5000; admission.trackedOrganizations() > 0 && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const trackedAfterIdle = await tracked();
  await admission.close();
  if (redis) closeRedis(redis);
  return { peakRssMb: Math.round(peakRss / 1048576), trackedAfterCalls, trackedAfterIdle };
}

if (process.argv[1]?.endsWith('idleScenario.ts')) {
  run(process.argv[2]).then(
    (result) => console.log(JSON.stringify(result)),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
