import type { AiVisibilityQuery } from '../generated/graphql.js';
import type { AiVisibilityPayload, AiVisibilitySetupRequired } from '../routes/payloadSchemas.js';
import { setupRequired } from './setupRequired.js';
import { toUtcTimestamp } from './utcTimestamp.js';

type ProgramSite = NonNullable<AiVisibilityQuery['organization']>['siteLookup'][number];
/** A site's AI visibility program; its rollups come newest first, and only the first is read. */
export type AiVisibilityProgram = NonNullable<ProgramSite['aiVisibility']>;

/** The newest 30-day rollup and prompt counts; no program → the setup-required answer. */
export function toAiVisibilityPayload(
  site: string,
  program: AiVisibilityProgram | null,
): AiVisibilityPayload | AiVisibilitySetupRequired {
  if (program === null) return setupRequired(site, 'no_ai_visibility');
  const rollup = program.rollups[0];
  return {
    site,
    ai_visibility: {
      // The platform keeps the score in basis points; the API gives a fraction.
      score: rollup ? rollup.scoreBps / 10_000 : null,
      activePrompts: program.promptCounts.active,
      pausedPrompts: program.promptCounts.paused,
      summary: {
        appearanceRate: rollup?.appearanceRate ?? null,
        shareOfVoice: rollup?.shareOfVoice ?? null,
        computedAt: rollup ? toUtcTimestamp(rollup.computedAt) : null,
      },
    },
  };
}
