import { z } from 'zod';
import { ApiError, type ErrorReason } from '../errors.js';
import { SITE_MAX_LENGTH } from './payloadSchemas.js';

/** A parsed query string as Koa gives it: repeated names become arrays. */
export type QueryValues = Readonly<Record<string, string | string[] | undefined>>;

const SITE_PROBLEMS = {
  site_missing: 'The `site` query parameter is required: the exact domain or the slug of a site.',
  site_repeated: 'Give the `site` query parameter only once.',
  site_too_long: `The \`site\` query parameter is at most ${SITE_MAX_LENGTH} characters long.`,
} as const satisfies Partial<Record<ErrorReason, string>>;

type SiteProblem = keyof typeof SITE_PROBLEMS;

function siteProblem(raw: unknown): SiteProblem | null {
  if (Array.isArray(raw)) return 'site_repeated';
  const site = typeof raw === 'string' ? raw.trim() : '';
  if (site === '') return 'site_missing';
  return site.length > SITE_MAX_LENGTH ? 'site_too_long' : null;
}

/**
 * `site`: required, given once, not blank, at most SITE_MAX_LENGTH characters; the
 * trimmed value is what the answer echoes. Each failure carries its own reason.
 */
export const siteParameter = z
  .preprocess((raw, ctx) => {
    const problem = siteProblem(raw);
    if (problem === null) return typeof raw === 'string' ? raw.trim() : raw;
    ctx.addIssue({ code: 'custom', message: SITE_PROBLEMS[problem], params: { reason: problem } });
    return z.NEVER;
  }, z.string().min(1).max(SITE_MAX_LENGTH))
  .meta({
    description:
      "The site's exact domain or its slug, given once. Missing, blank, repeated or too long → 400; no match in " +
      'your organization → 404; a slug shared by several sites → 400 (retry with the exact domain).',
  });

/**
 * The spec's lenient number: only plain decimal digits are read; 0, negative,
 * fractional, non-numeric, empty or repeated values mean the default, and a value
 * above the maximum means the maximum. An invalid value is never an error.
 */
export function lenientPositiveInt(fallback: number, max: number, what: string) {
  return z
    .preprocess((raw) => {
      if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) return undefined;
      // Any number of digits is a valid (if huge) value and clamps; Number() of a long
      // digit string is a large finite number or Infinity, both above any maximum.
      const value = Number(raw);
      return value < 1 ? undefined : Math.min(value, max);
    }, z.int().min(1).max(max).default(fallback))
    .meta({
      description:
        `${what} Default ${fallback}, maximum ${max}. Only a plain positive whole number of decimal digits is read; ` +
        'any other value (0, negative, fractional, non-numeric, empty or repeated) means the default, and a value ' +
        'above the maximum means the maximum. An invalid value is never an error.',
    });
}

export type RouteQuery = z.ZodObject<Record<string, z.ZodType<string | number, unknown>>>;

/** The query as the route declares it, or the 400 its first problem calls for. */
export function parseQuery<Q extends RouteQuery>(schema: Q, query: QueryValues): z.output<Q> {
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const reason = issue?.code === 'custom' ? siteReason(issue.params?.reason) : 'site_missing';
  throw new ApiError('BAD_REQUEST', SITE_PROBLEMS[reason], { reason });
}

function siteReason(reason: unknown): SiteProblem {
  return reason === 'site_repeated' || reason === 'site_too_long' ? reason : 'site_missing';
}
