import { hash } from 'node:crypto';
import type { CacheResult } from './createAnswerCache.js';

const CACHE_NAME = 'gateway';

/** Cache-Status (RFC 9211) for one answer; the OpenAPI document's Cache-Status header says what each form means. */
export function cacheStatusField(result: CacheResult, ttlSeconds: number): string {
  if (ttlSeconds <= 0) return `${CACHE_NAME}; fwd=bypass`;
  const age = result.ageSeconds ?? 0;
  switch (result.status) {
    case 'hit':
      return `${CACHE_NAME}; hit; ttl=${ttlSeconds - age}`;
    case 'stale':
      return `${CACHE_NAME}; fwd=stale; ttl=${ttlSeconds - age}; detail=stale-if-error`;
    case 'miss':
      return result.collapsed ? `${CACHE_NAME}; fwd=miss; collapsed` : `${CACHE_NAME}; fwd=miss`;
  }
}

/** Answers are per organization (private) and as fresh as the gateway's own cache. */
export function cacheControlField(ttlSeconds: number): string {
  return ttlSeconds > 0 ? `private, max-age=${ttlSeconds}` : 'no-store';
}

/** If-None-Match (RFC 9110 §13.1.2): `*` or any listed tag by weak comparison; anything unparsable matches nothing. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  const current = etag.startsWith('W/') ? etag.slice(2) : etag;
  for (const match of value.matchAll(/(?:W\/)?("[\x21\x23-\x7e\x80-\xff]*")/g)) {
    if (match[1] === current) return true;
  }
  return false;
}

/** A strong validator over the exact bytes sent: equal bytes, equal tag. */
export function strongEtag(body: string | Buffer): string {
  return `"${hash('sha256', body, 'base64url').slice(0, 27)}"`;
}
