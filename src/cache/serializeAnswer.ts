import { hash } from 'node:crypto';
import { successBody } from '../envelope.js';
import type { CachedAnswer } from './answerCache.js';
import { strongEtag } from './cacheFields.js';

/** How a body whose payload echoes a site begins, up to the site's JSON string. */
const SITE_PREFIX = '{"data":{"site":';
/** How the envelope of any object payload begins, up to its first field. */
const DATA_OPEN = '{"data":{';

/**
 * A serialized success answer as stored: the bytes and tag for the site it was loaded
 * with, and where that site ends in the bytes, so another spelling of the same site is
 * answered by splicing its own echo in (answerFor) rather than from an entry of its own.
 */
export interface StoredAnswer {
  readonly answer: CachedAnswer;
  /** The `site` the body echoes; undefined for a payload without one. */
  readonly site: string | undefined;
  /** Where the echoed site's JSON string ends in `answer.body`. */
  readonly siteEnd: number;
  /** A hash of the body without the site's JSON string; each spelling's tag builds on it. */
  readonly frameHash: string;
  /** The tag of the last other spelling answered: a caller that keeps to one spelling hashes it once. */
  otherTag?: { readonly site: string; readonly etag: string };
}

/**
 * Serializes a payload into its success envelope once. A payload that echoes a site is
 * written with the site as its first field, whatever the field order of the payload.
 */
export function serializeAnswer(payload: unknown): StoredAnswer {
  const site = echoedSite(payload);
  if (site === undefined) {
    const body = JSON.stringify(successBody(payload));
    return { answer: { body, etag: strongEtag(body) }, site, siteEnd: 0, frameHash: '' };
  }
  const { site: _echo, ...rest } = payload as { site: string };
  // `data` leads the envelope: the fields after the site continue where DATA_OPEN ends.
  const after = JSON.stringify(successBody(rest)).slice(DATA_OPEN.length);
  const tail = after.startsWith('}') ? after : `,${after}`;
  const siteJson = JSON.stringify(site);
  const frameHash = hashOf(SITE_PREFIX + tail);
  return {
    answer: { body: SITE_PREFIX + siteJson + tail, etag: siteEtag(frameHash, siteJson) },
    site,
    siteEnd: SITE_PREFIX.length + siteJson.length,
    frameHash,
  };
}

/**
 * The answer for a request that typed `site`: the stored one when it typed the same (or
 * the payload echoes no site), else the stored bytes with its own spelling spliced in.
 * The tag is a hash of the bytes sent, taken as (body without the site, the site): equal
 * bytes always get equal tags, and an answer hashes only its short site.
 */
export function answerFor(stored: StoredAnswer, site: string | undefined): CachedAnswer {
  if (site === undefined || stored.site === undefined || site === stored.site) return stored.answer;
  const siteJson = JSON.stringify(site);
  const body = SITE_PREFIX + siteJson + stored.answer.body.slice(stored.siteEnd);
  const known = stored.otherTag;
  if (known !== undefined && known.site === site) return { body, etag: known.etag };
  const etag = siteEtag(stored.frameHash, siteJson);
  stored.otherTag = { site, etag };
  return { body, etag };
}

function echoedSite(payload: unknown): string | undefined {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const site: unknown = (payload as { site?: unknown }).site;
  return typeof site === 'string' ? site : undefined;
}

/** One-shot crypto.hash, as for key hashes: no Hash object per answer. */
function hashOf(text: string): string {
  return hash('sha256', text, 'base64url');
}

function siteEtag(frameHash: string, siteJson: string): string {
  return strongEtag(frameHash + siteJson);
}
