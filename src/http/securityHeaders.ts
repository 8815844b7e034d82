import type { ServerResponse } from 'node:http';

/** Answers of the public routes differ by key: shared caches must keep them apart. */
export const CALLER_VARY = 'Authorization, X-API-Key';

/**
 * Headers every answer carries: no content sniffing of what is always JSON or a known
 * type; and an error is never stored by anyone, since it says something about a moment
 * (a busy upstream, a spent budget) or a caller (a refused key).
 */
export function setSecurityHeaders(res: ServerResponse, status: number): void {
  if (res.headersSent) return;
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (status >= 400) res.setHeader('Cache-Control', 'no-store');
}
