import { z } from 'zod';

/** The schemas the OpenAPI document names as components, each emitted once under `#/components/schemas/<id>`. */
export const documentedSchemas = z.registry<{ id: string; description?: string }>();

/*
 * The success payloads of the four routes (spec section 2), declared once: the mappers produce
 * their inferred types and the OpenAPI document is generated from them. Objects are strict so
 * the document states that nothing else is ever sent.
 */

/** A domain name is at most 253 characters; no slug or domain longer than that can match a site. */
export const SITE_MAX_LENGTH = 253;

export const SiteEcho = z
  .string()
  .min(1)
  .max(SITE_MAX_LENGTH)
  .register(documentedSchemas, { id: 'SiteEcho', description: 'The `site` parameter as given, trimmed.' });

const utcTimestamp = z.iso.datetime().describe('ISO 8601 UTC timestamp, ending in Z.');
const fraction = z.number().min(0).max(1);
const score = z.number().min(0).max(100).nullable();
const count = z.int().min(0);

function setupRequired<R extends string>(id: string, reason: R, description: string) {
  return z
    .object({ site: SiteEcho, setup_required: z.literal(true), reason: z.literal(reason) })
    .strict()
    .register(documentedSchemas, { id, description });
}

export const Mover = z
  .object({
    keyword: z.string(),
    from: z.int().min(1).nullable().describe('Position at the start of the window; null if unranked then.'),
    to: z.int().min(1).nullable().describe('Newest position; null if unranked now.'),
    delta: z
      .int()
      .nullable()
      .describe('`from` minus `to`: positive means the keyword moved up. Null when either side is null.'),
  })
  .strict()
  .register(documentedSchemas, { id: 'Mover', description: 'A keyword whose position changed over the window.' });

/** The rankings payload; its bounds are the maxima of the route's query. */
export const rankingsPayload = (maxDays: number, maxMovers: number) =>
  z
    .object({
      site: SiteEcho,
      days: z.int().min(1).max(maxDays).describe('The window used, in days.'),
      movers: z
        .array(Mover)
        .max(maxMovers)
        .describe(
          'Keywords whose position changed, largest move first (an unranked side counts as 101 for ordering only); ' +
            'ties by keyword text.',
        ),
    })
    .strict()
    .register(documentedSchemas, { id: 'RankingsPayload', description: 'The movers over the window.' });

export const AiVisibilityPayload = z
  .object({
    site: SiteEcho,
    ai_visibility: z
      .object({
        score: fraction
          .nullable()
          .describe('Newest 30-day visibility score as a fraction; null until the first rollup exists.'),
        activePrompts: count,
        pausedPrompts: count,
        summary: z
          .object({
            appearanceRate: fraction.nullable(),
            shareOfVoice: fraction.nullable(),
            computedAt: utcTimestamp.nullable(),
          })
          .strict(),
      })
      .strict(),
  })
  .strict()
  .register(documentedSchemas, { id: 'AiVisibilityPayload', description: 'The newest AI visibility rollup.' });

export const AiVisibilitySetupRequired = setupRequired(
  'AiVisibilitySetupRequired',
  'no_ai_visibility',
  'The site has no AI visibility program yet.',
);

export const PublicKeyword = z
  .object({
    keyword: z.string(),
    position: z.int().min(1).nullable(),
    unranked: z.boolean().describe('True when the keyword has no ranking (position null).'),
    volume: count.nullable().describe('Monthly search volume.'),
    clusterLabel: z.string().nullable(),
  })
  .strict()
  .register(documentedSchemas, { id: 'Keyword', description: 'A tracked keyword.' });

/** The keywords payload; its bound is the maximum `limit` of the route's query. */
export const keywordsPayload = (maxKeywords: number) =>
  z
    .object({
      site: SiteEcho,
      keywords: z
        .array(PublicKeyword)
        .max(maxKeywords)
        .describe('Best position first (ties by keyword text), then unranked keywords by text.'),
    })
    .strict()
    .register(documentedSchemas, { id: 'KeywordsPayload', description: 'The first `limit` tracked keywords.' });

export const AuditPayload = z
  .object({
    site: SiteEcho,
    audit: z
      .object({
        latestRun: z
          .object({
            id: z.guid(),
            completedAt: utcTimestamp,
            scores: z.object({ overall: score, aiCrawl: score, decay: score, technical: score }).strict(),
          })
          .strict(),
        issueCounts: z.object({ critical: count, warn: count, info: count }).strict(),
      })
      .strict(),
  })
  .strict()
  .register(documentedSchemas, {
    id: 'AuditPayload',
    description: 'Scores and issue counts of the newest completed audit.',
  });

export const AuditSetupRequired = setupRequired(
  'AuditSetupRequired',
  'no_audit',
  'No audit of the site has completed yet.',
);

export type Mover = z.output<typeof Mover>;
export type RankingsPayload = z.output<ReturnType<typeof rankingsPayload>>;
export type AiVisibilityPayload = z.output<typeof AiVisibilityPayload>;
export type AiVisibilitySetupRequired = z.output<typeof AiVisibilitySetupRequired>;
export type PublicKeyword = z.output<typeof PublicKeyword>;
export type KeywordsPayload = z.output<ReturnType<typeof keywordsPayload>>;
export type AuditPayload = z.output<typeof AuditPayload>;
export type AuditSetupRequired = z.output<typeof AuditSetupRequired>;
