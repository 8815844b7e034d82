import type { AiVisibilityPayload, AiVisibilitySetupRequired } from '../routes/payloadSchemas.js';
import { setupRequired } from './setupRequired.js';
import { toUtcTimestamp } from './utcTimestamp.js';

export interface AiVisibilityProgram {
  promptCounts: { active: number; paused: number };
  /** Newest first; only the first is read. */
  rollups: ReadonlyArray<{ scoreBps: number; appearanceRate: number; shareOfVoice: number; computedAt: string }>;
}

const BASIS_POINTS_PER_UNIT = 10_000;

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
      score: rollup ? rollup.scoreBps / BASIS_POINTS_PER_UNIT : null,
      activePrompts: program.promptCounts.active,
      pausedPrompts: program.promptCounts.paused,
      summary: {
        appearanceRate: rollup ? rollup.appearanceRate : null,
        shareOfVoice: rollup ? rollup.shareOfVoice : null,
        computedAt: rollup ? toUtcTimestamp(rollup.computedAt) : null,
      },
    },
  };
}
