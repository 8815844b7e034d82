import type { CacheParams } from '../routes/publicRoute.js';

/**
 * The platform's identity of a `site` value (platform.graphql, `siteLookup`): a domain
 * always contains a dot and matches ASCII case-insensitively; a slug never does and
 * matches exactly. So `Acme.COM` and `acme.com` are one site, `Acme` and `acme` are two
 * slugs, and `acme.com.` is not `acme.com`. Only A–Z fold: Unicode lowercasing would
 * fold the Kelvin sign into `k`, which the platform does not.
 */
export function siteIdentity(site: string): string {
  if (!site.includes('.') || !/[A-Z]/.test(site)) return site;
  return site.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/**
 * Where an answer is cached, and the `site` its body echoes. The organization leads the key, so no
 * two organizations ever share an entry; spellings of one site share one entry and one platform call.
 */
export function cacheKeyFor(organizationId: string, path: string, params: CacheParams) {
  const site = typeof params.site === 'string' ? params.site : undefined;
  const identity = site === undefined ? site : siteIdentity(site);
  const keyParams = identity === site ? params : { ...params, site: identity };
  return { key: `${organizationId}\u0000${path}\u0000${JSON.stringify(keyParams)}`, site };
}
