import { ApiError } from '../errors.js';

/**
 * `siteLookup` matches an exact domain or a slug, and slugs are not unique. Exactly
 * one match continues; none is 404 (another organization's site looks the same as
 * a missing one); several ask the caller for the exact domain.
 *
 * It takes the answer's whole `organization`: the schema allows it to be null (no
 * organization has this id: it has no sites, so 404), but never to be absent, nor
 * `siteLookup` (a non-null list) to be absent or null. Such an answer is the platform
 * breaking its schema (→ 502), not an empty lookup: read as 404, a broken platform
 * would tell every caller that their sites do not exist.
 */
export function singleSite<S>(organization: { readonly siteLookup: readonly S[] } | null | undefined): S {
  if (organization === undefined) throw new TypeError('answer has no organization field');
  const matches = organization === null ? [] : organization.siteLookup;
  // A non-list is the platform breaking its schema (→ 502), not a lookup with many matches.
  if (!Array.isArray(matches)) throw new TypeError('siteLookup is not a list');
  if (matches.length === 0) {
    throw new ApiError('NOT_FOUND', 'No site matches `site` in your organization.', { reason: 'site_not_found' });
  }
  if (matches.length > 1) {
    throw new ApiError('BAD_REQUEST', 'More than one site matches `site`; retry with the exact domain.', {
      reason: 'site_ambiguous',
    });
  }
  return matches[0] as S;
}
