import { ApiError } from '../errors.js';

/** A parsed query string as Koa gives it: repeated names become arrays. */
export type QueryValues = Readonly<Record<string, string | string[] | undefined>>;

/** `site` is required, given once, not blank; the trimmed value is what the answer echoes. */
export function requireSite(query: QueryValues): string {
  const raw = query.site;
  if (Array.isArray(raw)) {
    throw new ApiError('BAD_REQUEST', 'Give the `site` query parameter only once.', { reason: 'site_repeated' });
  }
  const site = raw?.trim() ?? '';
  if (site === '') {
    throw new ApiError('BAD_REQUEST', 'The `site` query parameter is required: the exact domain or the slug of a site.', {
      reason: 'site_missing',
    });
  }
  return site;
}

/**
 * A positive whole number written in plain decimal digits, clamped to `max`.
 * Anything else (0, negative, fractions, words, empty, repeated) means `fallback`:
 * the spec makes invalid values use the default rather than fail.
 */
export function positiveIntOrDefault(raw: string | string[] | undefined, fallback: number, max: number): number {
  if (typeof raw !== 'string' || !/^[0-9]+$/.test(raw)) return fallback;
  // Any number of digits is a valid (if huge) value and clamps; Number() of a long
  // digit string is a large finite number or Infinity, both above any maximum.
  const value = Number(raw);
  if (value < 1) return fallback;
  return Math.min(value, max);
}
