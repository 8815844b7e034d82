import { ApiError } from '../errors.js';

/**
 * `siteLookup` matches an exact domain or a slug, and slugs are not unique. Exactly
 * one match continues; none is 404 (another organization's site looks the same as
 * a missing one); several ask the caller for the exact domain.
 */
export function singleSite<S>(matches: readonly S[] | null | undefined): S {
  // A non-list is the platform breaking its schema (→ 502), not a lookup with many matches.
  if (matches !== null && matches !== undefined && !Array.isArray(matches)) {
    throw new TypeError('siteLookup is not a list');
  }
  const list = matches ?? [];
  if (list.length === 0) {
    throw new ApiError('NOT_FOUND', 'No site matches `site` in your organization.', { reason: 'site_not_found' });
  }
  if (list.length > 1) {
    throw new ApiError('BAD_REQUEST', 'More than one site matches `site`; retry with the exact domain.', {
      reason: 'site_ambiguous',
    });
  }
  return list[0] as S;
}
