import type { LatestAuditQuery } from '../generated/graphql.js';
import type { AuditPayload, AuditSetupRequired } from '../routes/payloadSchemas.js';
import { setupRequired } from './setupRequired.js';
import { toUtcTimestamp } from './utcTimestamp.js';

type AuditedSite = NonNullable<LatestAuditQuery['organization']>['siteLookup'][number];
/** The newest completed audit run of a site, as the platform answers it. */
export type CompletedAuditRun = AuditedSite['auditRuns']['edges'][number]['node'];

const COUNT_FIELD = { CRITICAL: 'critical', WARNING: 'warn', INFO: 'info' } as const;

/** The newest completed run's scores and counts (never issue rows); none → setup required. */
export function toAuditPayload(site: string, run: CompletedAuditRun | null): AuditPayload | AuditSetupRequired {
  if (run === null) return setupRequired(site, 'no_audit');
  if (run.completedAt === null) throw new TypeError('a completed audit run has no completedAt');
  const issueCounts = { critical: 0, warn: 0, info: 0 };
  for (const row of run.issueSummary) {
    const field = COUNT_FIELD[row.severity];
    if (field !== undefined) issueCounts[field] += row.count;
  }
  return {
    site,
    audit: {
      latestRun: {
        id: run.id,
        completedAt: toUtcTimestamp(run.completedAt),
        scores: {
          overall: run.scores?.overall ?? null,
          aiCrawl: run.scores?.aiCrawl ?? null,
          decay: run.scores?.contentDecay ?? null,
          technical: run.scores?.technical ?? null,
        },
      },
      issueCounts,
    },
  };
}
