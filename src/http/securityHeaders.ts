/** Answers of the public routes differ by key: shared caches must keep them apart. */
export const CALLER_VARY = 'Authorization, X-API-Key';
